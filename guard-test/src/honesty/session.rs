//! The clients the cases speak through: each is a scripted human connected to the server
//! under test over a [`Link`], and each call's arguments become `tools/call` params here.

use std::{future::Future, sync::Arc};

use rmcp::{
    RoleClient, ServerHandler,
    model::CallToolRequestParams,
    service::{RunningService, ServiceError},
};
use serde_json::Value;

use super::{
    kit::{Fixture, Kit, Probe},
    observed::CallOutcome,
    proxy::{Gate, Link},
};
use crate::testing::ScriptedHuman;

pub(super) type Client = RunningService<RoleClient, ScriptedHuman>;

impl<F, Fut, S> Kit<F>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture<S>>,
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    /// `n` answers to the questions of `n` calls of `args`.
    pub(super) fn human(&self, probe: &Probe, args: &Value, n: usize) -> ScriptedHuman {
        let human = ScriptedHuman::new(self.protocol.clone());
        if let Some(answer) = &probe.human {
            for _ in 0..n {
                human.will(answer(args));
            }
        }
        human
    }

    pub(super) async fn connect(
        &self,
        server: S,
        human: ScriptedHuman,
        gate: Option<Arc<Gate>>,
        cut_after_call: bool,
    ) -> Result<(Client, Link), String> {
        let (io, link) = Link::open(server, gate, cut_after_call);
        let client = tokio::time::timeout(self.patience, human.connect(io))
            .await
            .map_err(|_| "the client could not finish connecting".to_owned())?
            .map_err(|e| format!("the client could not connect: {e}"))?;
        Ok((client, link))
    }

    /// Closes the client and waits (bounded) for the server to finish.
    pub(super) async fn hang_up(&self, client: Client, link: Link) {
        let _ = client.cancel().await;
        let _ = tokio::time::timeout(self.patience, link.server).await;
    }

    /// One call on a session of its own, after `shift` other requests on that session, so
    /// its JSON-RPC request id differs from that of a call on a fresh session.
    pub(super) async fn call(
        &self,
        server: S,
        probe: &Probe,
        args: &Value,
        shift: usize,
    ) -> Result<CallOutcome, String> {
        let (client, link) = self
            .connect(server, self.human(probe, args, 1), None, false)
            .await?;
        for _ in 0..shift {
            if let Err(e) = client.list_all_tools().await {
                self.hang_up(client, link).await;
                return Err(format!("tools/list failed: {e}"));
            }
        }
        let outcome = client.call_tool(params(&probe.tool, args)?).await;
        self.hang_up(client, link).await;
        Ok(outcome)
    }
}

/// One of a burst's calls; it leaves the gate whatever the outcome, so the others are not
/// held waiting for it.
pub(super) async fn call_on(client: &Client, gate: &Gate, probe: &Probe) -> CallOutcome {
    let outcome = match params(&probe.tool, &probe.args) {
        Ok(params) => client.call_tool(params).await,
        Err(_) => Err(ServiceError::UnexpectedResponse),
    };
    gate.leave();
    outcome
}

/// The `tools/call` params for `args`, which must be a JSON object.
pub(super) fn params(tool: &str, args: &Value) -> Result<CallToolRequestParams, String> {
    let Value::Object(arguments) = args else {
        return Err(format!("tool arguments must be a JSON object, got {args}"));
    };
    Ok(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone()))
}
