//! Approvals as MCP Tasks (SEP-2663, `io.modelcontextprotocol/tasks`) on protocol 2026-07-28.
//!
//! When the server advertises the extension ([`advertise`]) and the client declared it, a
//! call approved on guard's page answers with a task instead of MRTR rounds. The task id is
//! the approval id, and everything `tasks/get` answers is read from the approval's rows in
//! the operation store (`guard_approvals`, `guard_approval_tasks`), so the task survives a
//! restart and any replica sharing the store and the guard's key serves it:
//!
//! - pending: `input_required`, with the same URL-mode elicitation (the requester's link,
//!   derived from the approval id under the guard's key) an MRTR round carries;
//! - decided: the first `tasks/get` after the decision claims the run (`runner`, `run_at`,
//!   one claim across replicas) and calls the server's own `call_tool` with the stored
//!   arguments, under the identity of the `tasks/get` (which is the requester's: nobody
//!   else sees the task). That call is guard's flow from the start: the exposure, the
//!   preview, the approval's status, the fingerprint the approvers saw (a changed target
//!   ends as `state_changed`), the one use of the approval (`guard_approval_uses`, the same
//!   row a later MRTR call needs, so of the two only one runs the effect), the re-check and
//!   the audit records. Its result, the tool's natural one, becomes the task's `completed`
//!   result (rejected and expired approvals end so too, with their natural results); a
//!   JSON-RPC error makes it `failed`. The run goes on in the background if it outlasts the
//!   `tasks/get`, which then answers `working`; a claim nobody ended within
//!   [`RUN_TAKEN_OVER_AFTER`] is taken over.
//! - withdrawn (by [`cancel`], or by the client's `decline` through [`update`]): `cancelled`,
//!   and nothing runs on the approval afterwards, even if an approver decides later.
//!
//! Only the requester (compared as people, in their tenant) sees, updates or cancels a task;
//! anyone else gets the same answer as for an id that was never issued.

use std::time::{Duration, SystemTime};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask,
        ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams,
        GetTaskResult, InputRequest, InputRequests, JsonObject, MetaObject, ServerCapabilities,
        TASKS_EXTENSION_ID, Task, TaskPayload, TaskStatus, UpdateTaskParams,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use super::{Flow, finish::state_changed, mrtr::INPUT_KEY};
use crate::{
    approval::{ApprovalPage, KEEP_AFTER_DEADLINE, Status, TaskView},
    entry::dispatch::{self, TaskMode},
    error::{Code, ToolError},
    form::Form,
    guard::Guarded,
    outcome::{Outcome, Step},
    person::Person,
    preview::Effect,
};

/// How often a client should poll a task that waits for people (`pollIntervalMs`).
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// A run of a decided task that claimed it this long ago and did not end it is taken over by
/// the next `tasks/get` (the process running it stopped). The approval's use row still lets
/// the effect run at most once: a run that takes over after the effect ran ends as
/// `approval_used`.
pub const RUN_TAKEN_OVER_AFTER: Duration = Duration::from_secs(300);

/// `capabilities` with the Tasks extension advertised, for the server's `get_info`. A server
/// that advertises it has its approvals on guard's page answered as tasks (for clients that
/// declared the extension, on 2026-07-28), so it must also delegate `tasks/get`,
/// `tasks/update` and `tasks/cancel` to [`get`], [`update`] and [`cancel`].
pub fn advertise(mut capabilities: ServerCapabilities) -> ServerCapabilities {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    capabilities
}

/// `tasks/get` for the tasks guard's approvals answer with: where the approval stands, and
/// once it is decided, the call run once and its natural result. The server is cloned into
/// the run, which goes on if it outlasts this request.
pub async fn get<S>(
    server: &S,
    request: GetTaskParams,
    context: RequestContext<RoleServer>,
) -> Result<GetTaskResult, ErrorData>
where
    S: ServerHandler + Guarded + Clone,
{
    let guard = server.guard();
    let (page, mut view) = mine(server, &request.task_id, &context).await?;
    let desk = &page.shared().desk;
    if view.ended.is_none() && !matches!(view.status, Status::Pending | Status::Withdrawn) {
        let runner = crate::trace::new_id();
        let claimed = desk
            .claim_run(&view.id, &runner, RUN_TAKEN_OVER_AFTER)
            .await
            .map_err(unavailable)?;
        if claimed {
            let run = tokio::spawn(run(
                server.clone(),
                view.id.clone(),
                view.tool.clone(),
                view.arguments.clone(),
                context,
            ));
            // Answered `working` if the run takes longer; it ends the task itself.
            let _ = tokio::time::timeout(guard.round_wait(), run).await;
        }
        view = desk
            .task(&view.id)
            .await
            .map_err(unavailable)?
            .ok_or_else(unknown)?;
    }
    Ok(GetTaskResult::new(detailed(page, &view)?))
}

/// `tasks/update`: the client's answer to the task's URL elicitation. `accept` only says the
/// human went to the page; `decline` or `cancel` withdraw the approval, as on an MRTR retry.
/// Answers under other keys are ignored.
pub async fn update<S: Guarded>(
    server: &S,
    request: UpdateTaskParams,
    context: RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let (page, view) = mine(server, &request.task_id, &context).await?;
    let Some(answer) = request.input_responses.get(INPUT_KEY) else {
        return Ok(());
    };
    let action = serde_json::from_value::<ElicitResult>(answer.clone())
        .map(|a| a.action)
        .map_err(|e| {
            ErrorData::invalid_params(
                format!(
                    "The answer under `{INPUT_KEY}` is not an elicitation result ({e}); nothing changed. Send {{\"action\": \"accept\"}}, \"decline\" or \"cancel\"."
                ),
                None,
            )
        })?;
    if action != ElicitationAction::Accept {
        page.shared()
            .desk
            .cancel_task(&view.id, &said(CANCEL_DECLINED))
            .await
            .map_err(unavailable)?;
    }
    Ok(())
}

/// `tasks/cancel`: withdraws the approval (recorded like every withdrawal, with the reason
/// `tasks/cancel`), and nothing runs on it afterwards, even if an approver decides later. A
/// run already under way is not stopped: the task ends as that run ends.
pub async fn cancel<S: Guarded>(
    server: &S,
    request: CancelTaskParams,
    context: RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let (page, view) = mine(server, &request.task_id, &context).await?;
    page.shared()
        .desk
        .cancel_task(&view.id, &said(CANCEL_ASKED))
        .await
        .map_err(unavailable)?;
    Ok(())
}

const CANCEL_ASKED: &str = "Cancelled: the approval was withdrawn (tasks/cancel); nothing ran, and nothing will run on it. Call the tool again to ask afresh.";
const CANCEL_DECLINED: &str = "Cancelled: the user declined to open the approval page, so the approval was withdrawn; nothing ran, and nothing will run on it.";
const CANCEL_WITHDRAWN: &str = "Cancelled: the approval was withdrawn (the client declined, or what it would change changed); nothing ran, and nothing will run on it. Call the tool again to ask afresh.";

/// What a cancelled task's row keeps: the sentence its status message says.
fn said(text: &str) -> String {
    json!({ "statusMessage": text }).to_string()
}

/// The task `id` if the caller of `context` is its requester: otherwise, and for an id
/// never issued (or cleared), the same answer.
async fn mine<'s, S: Guarded>(
    server: &'s S,
    id: &str,
    context: &RequestContext<RoleServer>,
) -> Result<(&'s ApprovalPage, TaskView), ErrorData> {
    let page = server.guard().approval_page().ok_or_else(unknown)?;
    let caller = page
        .shared()
        .identify(context)
        .ok()
        .and_then(|who| Person::new(&who.tenant, &who.user).ok())
        .ok_or_else(unknown)?;
    match page.shared().desk.task(id).await.map_err(unavailable)? {
        Some(view) if view.requester.is(&caller) => Ok((page, view)),
        _ => Err(unknown()),
    }
}

/// The answer for a task the caller may not see, whether or not it exists.
fn unknown() -> ErrorData {
    ErrorData::invalid_params(
        "No such task: this server knows no task with this id for you (it was never issued, it ended long ago and was cleared, or another person started it). Call the tool again to start a new one.",
        None,
    )
}

fn unavailable(error: crate::store::StoreError) -> ErrorData {
    tracing::error!(%error, "the approval store could not be read for a task");
    ErrorData::internal_error(
        "The server cannot read its approvals right now; nothing was changed. Poll the task again in a moment.",
        None,
    )
}

/// The task as `tasks/get` answers it.
fn detailed(page: &ApprovalPage, view: &TaskView) -> Result<DetailedTask, ErrorData> {
    let (payload, message) = match (&view.ended, &view.status) {
        (Some((ended, stored)), _) => {
            let stored: JsonObject = serde_json::from_str(stored).map_err(|e| {
                tracing::error!(task_id = %view.id, error = %e, "a task's stored ending is not a JSON object");
                ErrorData::internal_error(
                    "The server cannot read how this task ended. Tell the operator.",
                    None,
                )
            })?;
            match ended.as_str() {
                "completed" => (TaskPayload::Completed { result: stored }, None),
                "failed" => (
                    TaskPayload::Failed { error: stored },
                    Some(format!(
                        "{} failed; nothing more runs on this approval.",
                        view.tool
                    )),
                ),
                _ => (
                    TaskPayload::Cancelled,
                    stored
                        .get("statusMessage")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                ),
            }
        }
        (None, Status::Pending) => {
            let Some(token) = page.shared().desk.derived_token(&view.id) else {
                return Err(ErrorData::internal_error(
                    "This server cannot name the approval link of this task: the servers sharing its store do not share the guard's key (GUARD_HMAC_KEY). Give every replica the same key, then poll again.",
                    None,
                ));
            };
            let params = ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: crate::approval::question(
                    view.message.as_deref(),
                    &view.summary,
                    view.required,
                ),
                url: page.shared().link(&token).to_string(),
                elicitation_id: view.id.clone(),
            };
            let requests = InputRequests::from([(
                INPUT_KEY.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            )]);
            (
                TaskPayload::InputRequired {
                    input_requests: requests,
                },
                Some(waiting(view)),
            )
        }
        (None, Status::Withdrawn) => (TaskPayload::Cancelled, Some(CANCEL_WITHDRAWN.to_owned())),
        (None, _) => (
            TaskPayload::Working,
            Some(format!(
                "Decided on the approval page; {} is being run once. Poll again for its result.",
                view.tool
            )),
        ),
    };
    let mut task = seed(view, payload.status());
    if let Some(message) = message {
        task = task.with_status_message(message);
    }
    Ok(DetailedTask::new(task, payload))
}

/// The task's metadata: its id (the approval's), its times, how long it is kept (until the
/// approval is purged, [`KEEP_AFTER_DEADLINE`] after its deadline) and how often to poll.
fn seed(view: &TaskView, status: TaskStatus) -> Task {
    let kept_until = view.expires_at + KEEP_AFTER_DEADLINE;
    let ttl = kept_until
        .duration_since(view.created_at)
        .unwrap_or_default();
    Task::new(
        view.id.clone(),
        status,
        rfc3339(view.created_at),
        rfc3339(SystemTime::now()),
    )
    .with_ttl_ms(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
    .with_poll_interval_ms(u64::try_from(POLL_INTERVAL.as_millis()).unwrap_or(2_000))
}

fn waiting(view: &TaskView) -> String {
    format!(
        "Waiting for approval on the approval page: {} of {} approvals so far, open until {}. Nothing has run.",
        view.given,
        view.required,
        rfc3339(view.expires_at)
    )
}

fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Runs the call of decided task `id` once through the server's own `call_tool` (guard's
/// exposure and flow, as the run of that approval only), and ends the task with its outcome.
async fn run<S: ServerHandler + Guarded>(
    server: S,
    id: String,
    tool: String,
    arguments: String,
    context: RequestContext<RoleServer>,
) {
    let response = match serde_json::from_str::<JsonObject>(&arguments) {
        Ok(arguments) => {
            // The requester's context, with a cancellation of its own: the client ending its
            // `tasks/get` does not stop a run that may have started the effect.
            let mut call = RequestContext::new(context.id.clone(), context.peer.clone());
            call.meta = context.meta.clone();
            call.extensions = context.extensions.clone();
            dispatch::run_of_task(&mut call, id.clone());
            let params = CallToolRequestParams::new(tool).with_arguments(arguments);
            server.call_tool(params, call).await
        }
        Err(error) => {
            tracing::error!(task_id = %id, %error, "a task's stored arguments are not a JSON object");
            Err(ErrorData::internal_error(
                "The server cannot read this task's arguments, so nothing ran. Call the tool again.",
                None,
            ))
        }
    };
    let (ended, payload) = match response {
        Ok(CallToolResponse::Complete(result)) => ("completed", serde_json::to_string(&result)),
        Ok(_) => (
            "failed",
            serde_json::to_string(&ErrorData::internal_error(
                "The approved call asked again instead of ending; nothing ran. Call the tool again.",
                None,
            )),
        ),
        Err(error) => ("failed", serde_json::to_string(&error)),
    };
    let Some(page) = server.guard().approval_page() else {
        return;
    };
    let stored = match payload {
        Ok(payload) => page.shared().desk.end_task(&id, ended, &payload).await,
        Err(error) => {
            tracing::error!(task_id = %id, %error, "a task's ending could not be written as JSON");
            return;
        }
    };
    if let Err(error) = stored {
        tracing::error!(task_id = %id, %error, "a task's ending could not be stored; the next tasks/get after the claim goes stale runs it again (the approval runs its effect at most once)");
    }
}

impl<F: Form> Flow<'_, F> {
    /// Whether this call's approval answers with a task: the server serves guard's tasks,
    /// the client declared them, and the call speaks 2026-07-28.
    pub(super) fn offers_task(&self) -> bool {
        self.call.task == TaskMode::Offer && self.is_mrtr()
    }

    /// The answer that starts (or, for an approval taken up, continues) task `id`: the
    /// approval becomes a task running this call's arguments, and the client polls it.
    pub(super) async fn task_created(
        &self,
        page: &ApprovalPage,
        id: &str,
    ) -> Box<CallToolResponse> {
        let arguments =
            match crate::canonical::canonical_json(&Value::Object(self.call.arguments.clone())) {
                Ok(arguments) => arguments,
                Err(e) => {
                    return self.refuse(
                        Outcome::InvalidArguments,
                        ToolError::new(
                            Code::InvalidInput,
                            format!("{}: {e}.", self.nothing_done_first()),
                        ),
                    );
                }
            };
        let desk = &page.shared().desk;
        let view = match desk.make_task(id, &arguments).await {
            Ok(()) => desk.task(id).await,
            Err(error) => Err(error),
        };
        match view {
            Ok(Some(view)) => {
                let task =
                    seed(&view, TaskStatus::InputRequired).with_status_message(waiting(&view));
                let mut meta = MetaObject::default();
                meta.0.insert(
                    "guard".into(),
                    json!({"outcome": Outcome::Asked.as_str(), "traceId": self.trace_id}),
                );
                Box::new(CallToolResponse::Task(
                    CreateTaskResult::new(task).with_meta(meta),
                ))
            }
            other => {
                if let Err(error) = other {
                    tracing::error!(trace_id = %self.trace_id, %error, "the approval could not be made a task");
                }
                desk.close(id, Status::Withdrawn).await;
                self.refuse(
                    Outcome::StoreFailed,
                    ToolError::new(
                        Code::Unavailable,
                        format!(
                            "{}: the server cannot keep this approval as a task right now (trace_id {}). Call the tool again in a moment.",
                            self.nothing_done_first(),
                            self.trace_id
                        ),
                    ),
                )
            }
        }
    }

    /// The run of decided task `id` (guard's `tasks/get` dispatched it): only the requester,
    /// with the arguments the task was opened for, and it ends as the approval was decided.
    /// An approved effect runs only if the preview still shows what the approvers saw, and
    /// only through the approval's one use.
    pub(super) async fn run_task(
        &self,
        page: &ApprovalPage,
        effect: &Effect,
        id: &str,
    ) -> Step<(Value, Option<crate::secret::Secret>)> {
        let desk = &page.shared().desk;
        let requester = self.requester(page)?;
        let watched = desk
            .watch(id, &requester, &self.bound_to()?)
            .await
            .map_err(|claim| self.unclaimed(&claim))?;
        self.seen().approval = Some((id.to_owned(), Vec::new()));
        match watched.status {
            Status::Approved
                if watched.fingerprint.as_deref() != Some(effect.fingerprint().as_str()) =>
            {
                Err(self.refuse(
                    Outcome::StateChanged,
                    state_changed(effect.subject(), self.nothing_done()),
                ))
            }
            Status::Pending => self.approval_pending(id, desk).await,
            status => self.decided(id, status, desk).await,
        }
    }
}
