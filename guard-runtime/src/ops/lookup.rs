//! `get_operation_result(operation_id)`: did it happen? It changes no operation, answers only
//! about the caller's own (anyone else's id is `OPERATION_NOT_FOUND`, as for an unknown one),
//! and leaves an audit record of who asked.

use rmcp::{handler::server::wrapper::Parameters, model::CallToolResponse};
use serde_json::{Value, json};

use super::{
    Configured,
    call::Caller,
    confirm::not_found,
    intent::{OperationRef, Status, Stored},
    rfc3339,
};
use crate::entry::dispatch::GuardCall;
use crate::store::now_ms;
use crate::{error::Code, outcome::Outcome};

/// The name of the generated tool.
pub const TOOL: &str = "get_operation_result";

/// Answers with the operation's status, preview and (once submitted) its result.
/// `prepare_tools` name the server's prepare tools, for the not-found answer.
pub async fn get_operation_result(
    guard: &dyn Configured,
    call: &GuardCall,
    Parameters(reference): Parameters<OperationRef>,
    prepare_tools: &[&str],
) -> Result<CallToolResponse, rmcp::ErrorData> {
    let caller = match Caller::start(guard, call, TOOL, "", &[]).await {
        Ok(caller) => caller,
        Err(done) => return Ok(*done),
    };
    let prepare = match prepare_tools {
        [one] => (*one).to_owned(),
        many => format!("one of {}", many.join(", ")),
    };
    let id = match caller.operation_id(&reference, &prepare).await {
        Ok(id) => id,
        Err(done) => return Ok(*done),
    };
    let who = &caller.identity;
    // The lookup is audited too (who asked about which operation), in its own transaction.
    let read = async {
        let mut tx = caller.ops.store.begin().await?;
        let intent = Stored::read(&mut tx, &id, (&who.tenant, &who.user), false).await?;
        let outcome = if intent.is_some() {
            Outcome::LookedUp
        } else {
            Outcome::Refused(Code::OperationNotFound)
        };
        let record = caller.record(outcome, Some(&id), None, None);
        caller.commit_audit(tx, &record).await?;
        Ok(intent)
    }
    .await;
    let intent = match read {
        Ok(Some(intent)) => intent,
        Ok(None) => return Ok(*caller.refuse(not_found(&id, &prepare), None)),
        Err(e) => {
            return Ok(*caller.unavailable(&e, "Ask again shortly before retrying anything"));
        }
    };
    let status = intent.effective_status(now_ms());
    let (shown, outcome, next, deferral) = match super::deferred::lookup(&intent) {
        Some((shown, outcome, next, deferral)) => (shown, outcome, next, deferral),
        None => (
            status.as_str(),
            status.outcome(),
            next(status).to_owned(),
            Value::Null,
        ),
    };
    let mut body = json!({
        "operation_id": intent.operation_id,
        "op": intent.op,
        "status": shown,
        "target": intent.target,
        "preview": Stored::json(Some(&intent.preview)),
        "created_at": rfc3339(intent.created_at),
        "expires_at": rfc3339(intent.expires_at),
        "confirmed_at": intent.confirmed_at.map(rfc3339),
        "result": Stored::json(intent.result.as_deref()),
        "next": next,
    });
    if !deferral.is_null() {
        body["deferred"] = deferral;
    }
    Ok(caller.answer(outcome, body, &intent.operation_id))
}

/// What the model should do next about an operation in `status`.
fn next(status: Status) -> &'static str {
    match status {
        Status::Prepared => "Not submitted yet. Confirm it only if the user agreed to the preview.",
        Status::Submitted => "Submitted; do not confirm it again.",
        Status::Expired => {
            "Expired without being submitted; prepare it again if the user still wants it."
        }
        Status::Rejected => {
            "Closed without being submitted because its target changed; prepare it again if the user still wants it."
        }
    }
}
