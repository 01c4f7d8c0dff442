//! A tool that declares an undo (`#[destructive(undo = ..., undo_within = ...)]`): its
//! caller is identified before the human is asked (the window will be theirs, step 3 in
//! `caller.rs`), the
//! question states the terms (`Flow::terms`), and after the effect guard opens the window
//! with what the handler handed over and names the undo in the model's result.
//!
//! A guard without an operation store keeps no windows, and neither does a server whose
//! allowlist or read-only mode hides `undo`: the question then says the effect cannot be
//! undone, and guard runs the tool's purge right after the effect, so it is final as the
//! human was told (a trashed file does not linger in the trash).

use rmcp::{
    handler::server::router::tool::ToolRouter,
    model::{CallToolResponse, ContentBlock},
};

use super::{Flow, rechecked::Owner};
use crate::{
    entry::hidden,
    outcome::Outcome,
    undo::{IntoReversible, Opened, Ran, Window},
};

impl<F> Flow<'_, F> {
    /// How long the effect stays undoable: the declaration's `undo_within`, if the guard
    /// has a store to keep the window in and the server publishes `undo` (an undo nobody
    /// can call is no undo: the effect is then final, and the question says so).
    pub(super) fn undoable(&self) -> Option<std::time::Duration> {
        self.spec.undo_within.filter(|_| {
            self.guard.operations().is_some() && self.guard.publishes(crate::undo::TOOL)
        })
    }

    /// Steps 9 and 10 of a reversible tool: the handler's outcome audited, then, if the
    /// effect ran, its undo window opened for `owner` (the caller step 3 identified) until
    /// `undo_within` from now, and
    /// the model's result ending with how to undo it. A window that cannot be stored leaves
    /// the effect final, and the result says so rather than promise an undo. `own` is the
    /// tool's function that adds its hidden routes to a router: without a store to keep the
    /// window in, the purge of its undo route runs at once.
    pub async fn finish_reversible<S, O>(
        &self,
        server: &S,
        owner: Owner,
        ran: impl IntoReversible,
        own: O,
    ) -> Result<CallToolResponse, rmcp::ErrorData>
    where
        S: Send + Sync + 'static,
        O: FnOnce(ToolRouter<S>) -> ToolRouter<S>,
    {
        let Ran {
            response,
            undo_data,
        } = ran.into_ran();
        // Decided once: an allowlist reloaded meanwhile cannot make the record's wait and the
        // window disagree.
        let undoable = self.undoable();
        let (response, outcome) = match (&undo_data, undoable) {
            // A window opens next: the effect's record comes first in the log.
            (Some(_), Some(_)) => self.settle_written(response).await,
            _ => self.settle(response),
        };
        let Ok(CallToolResponse::Complete(mut result)) = response else {
            return response;
        };
        let Some(data) = undo_data else {
            return Ok(self.tag(result, outcome).into());
        };
        let Some(within) = undoable else {
            return Ok(self
                .final_at_once(server, &owner, own, data, result, outcome)
                .await);
        };
        let opened = match data {
            Ok(data) => self.open_window(&data, within, owner).await,
            Err(reason) => Err(reason),
        };
        let operation_id = match opened {
            Ok(opened) => {
                result.content.push(ContentBlock::text(opened.note()));
                Some(opened.operation_id)
            }
            Err(reason) => {
                tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, %reason, "the effect ran but its undo window was not stored: it is final");
                result.content.push(ContentBlock::text(format!(
                    "This cannot be undone: the undo window could not be stored, so the effect is final. Quote trace_id {} to the operator.",
                    self.trace_id
                )));
                None
            }
        };
        Ok(self
            .tag_operation(result, outcome, operation_id.as_deref())
            .into())
    }

    /// No store, so no window: the tool's purge runs now on what the effect handed over,
    /// and the effect is final, as the question said.
    async fn final_at_once<S, O>(
        &self,
        server: &S,
        owner: &Owner,
        own: O,
        data: Result<serde_json::Value, String>,
        mut result: rmcp::model::CallToolResult,
        outcome: Outcome,
    ) -> CallToolResponse
    where
        S: Send + Sync + 'static,
        O: FnOnce(ToolRouter<S>) -> ToolRouter<S>,
    {
        let now = crate::store::now_ms();
        let purged = match data {
            Ok(data) => {
                let window = Window {
                    operation_id: self.trace_id.clone(),
                    tool: self.spec.name.to_owned(),
                    target: owner.target.shown().to_owned(),
                    data,
                    created_at: now,
                    expires_at: now,
                };
                let routes = hidden::Hidden::take(&mut own(ToolRouter::new()));
                let purged: Option<Result<(), String>> = match routes.undo(self.spec.name) {
                    Some(route) => {
                        hidden::invoke(route, server, self.call.request.clone(), window).await
                    }
                    None => None,
                };
                purged.unwrap_or_else(|| {
                    Err(
                        "the tool's router has no undo route for it, so its purge did not run"
                            .to_owned(),
                    )
                })
            }
            Err(reason) => Err(reason),
        };
        if let Err(reason) = purged {
            tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, %reason, "the effect ran without an undo window and its purge failed: what undoing would need is left behind");
            result.content.push(ContentBlock::text(format!(
                "The effect is final, but cleaning up after it failed. Quote trace_id {} to the operator.",
                self.trace_id
            )));
        }
        self.tag(result, outcome).into()
    }

    /// Opens the window, `within` long, of the effect that just ran on the confirmed target.
    async fn open_window(
        &self,
        data: &serde_json::Value,
        within: std::time::Duration,
        owner: Owner,
    ) -> Result<Opened, String> {
        let windows = self
            .guard
            .undo_windows()
            .ok_or("the guard has no operation store")?;
        let person = owner.person.ok_or("the caller was not identified")?;
        windows
            .open(
                &person,
                self.spec.name,
                owner.target.shown(),
                data,
                within,
                &self.trace_id,
            )
            .await
            .map_err(|e| e.to_string())
    }
}
