//! A scripted human for driving guarded servers in process: it answers each elicitation
//! from a queue and records every question it was shown. And a store that records the
//! trips its transactions make ([`CountingStore`]), and one pass of a server's deferred-call
//! runner that runs only what the database's clock says is due ([`run_due_deferred`]).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationCapability, FormElicitationCapability, Implementation, ProtocolVersion,
    },
    service::RequestContext,
    service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService},
    transport::IntoTransport,
};
use serde_json::Value;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod runner;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod trips;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub use runner::run_due_deferred;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub use trips::CountingStore;

/// The key of guard's one input request in an `InputRequiredResult` (2026-07-28): a client
/// answering by hand sends its answer back under it.
pub const INPUT_KEY: &str = rmcp_guard::__testing::INPUT_KEY;

/// What the scripted human does with the next form.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Submit this content (sent as is: it may be malformed on purpose).
    Accept(Value),
    /// Decline the form.
    Decline,
    /// Cancel (close) the form.
    Cancel,
    /// Never answer (the server's timeout must count it as cancel).
    Ignore,
}

/// A question the human was shown: the message and the exact `requestedSchema`.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The question's message.
    pub message: String,
    /// The exact `requestedSchema` the human was shown.
    pub schema: Value,
}

/// A client that plays the human from a script.
#[derive(Clone)]
pub struct ScriptedHuman {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    shown: Arc<Mutex<Vec<Shown>>>,
    protocol: ProtocolVersion,
    can_elicit: bool,
}

impl ScriptedHuman {
    /// A human on a client that speaks `protocol` and declares form elicitation.
    pub fn new(protocol: ProtocolVersion) -> Self {
        Self {
            answers: Arc::default(),
            shown: Arc::default(),
            protocol,
            can_elicit: true,
        }
    }

    /// A client that declares no elicitation capability at all.
    pub fn without_elicitation(protocol: ProtocolVersion) -> Self {
        Self {
            can_elicit: false,
            ..Self::new(protocol)
        }
    }

    /// Queues the answer to the next form.
    pub fn will(&self, answer: Answer) -> &Self {
        self.answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(answer);
        self
    }

    /// Connects over `transport` in this human's protocol era. From 2026-07-28 on there is
    /// no `initialize`: the client opens with `server/discover`, otherwise the session would
    /// quietly fall back to 2025-11-25.
    pub async fn connect<T, E, A>(
        self,
        transport: T,
    ) -> Result<RunningService<RoleClient, Self>, ClientInitializeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let lifecycle = if self.protocol.has_initialize() {
            ClientLifecycleMode::Initialize
        } else {
            ClientLifecycleMode::Discover {
                preferred_versions: vec![self.protocol.clone()],
            }
        };
        self.serve_with_lifecycle(transport, lifecycle).await
    }

    /// Every question shown so far.
    pub fn shown(&self) -> Vec<Shown> {
        self.shown.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ClientHandler for ScriptedHuman {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err(ErrorData::invalid_params(
                "the scripted human only fills forms",
                None,
            ));
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        self.shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Shown { message, schema });
        let next = self
            .answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        Ok(match next {
            Some(Answer::Accept(content)) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(content);
                result
            }
            Some(Answer::Decline) => ElicitResult::new(ElicitationAction::Decline),
            Some(Answer::Ignore) => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                ElicitResult::new(ElicitationAction::Cancel)
            }
            Some(Answer::Cancel) | None => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.can_elicit {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("guard-scripted-human", "0.1.0"),
        )
        .with_protocol_version(self.protocol.clone())
    }
}
