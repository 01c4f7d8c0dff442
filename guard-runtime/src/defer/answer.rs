//! What the model is told: after a confirmed call is deferred, when it runs and how to
//! withdraw it; after a withdrawal, what became of the call, with a stable code for every
//! refusal and guard's tag.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::{Scheduled, Status, TOOL, Withdrawal};
use crate::{
    error::{Code, ToolError},
    outcome::tag,
    rfc3339::{minute, utc as rfc3339},
};

impl Scheduled {
    /// The model's answer: what runs when, and how to withdraw it.
    pub fn note(&self, tool: &str, target: &str) -> String {
        format!(
            "Scheduled for {}: {tool} on {target} runs then, not now. To withdraw it, call {TOOL} with operation_id {} before {}; nothing runs then.",
            minute(self.due_at),
            self.operation_id,
            rfc3339(self.due_at)
        )
    }

    /// The model's answer where the server does not publish `withdraw`: what runs when,
    /// and that it cannot be withdrawn.
    pub fn final_note(&self, tool: &str, target: &str) -> String {
        format!(
            "Scheduled for {}: {tool} on {target} runs then, not now. It cannot be withdrawn: this server does not publish {TOOL}.",
            minute(self.due_at),
        )
    }

    /// The model's result for a call scheduled by `tool` on `target` under `trace_id`:
    /// `body` (with the id, status and due time added) as structured content, the
    /// [`note`](Self::note) as text (the [`final_note`](Self::final_note) unless
    /// `withdrawable`), and guard's tag with the id and `dueAt`.
    pub(crate) fn into_result(
        self,
        tool: &str,
        target: &str,
        mut body: serde_json::Map<String, serde_json::Value>,
        trace_id: &str,
        withdrawable: bool,
    ) -> CallToolResult {
        body.insert("operation_id".into(), self.operation_id.clone().into());
        body.insert("status".into(), Status::Scheduled.as_str().into());
        body.insert("due_at".into(), rfc3339(self.due_at).into());
        let mut result = CallToolResult::structured(serde_json::Value::Object(body));
        let note = if withdrawable {
            self.note(tool, target)
        } else {
            self.final_note(tool, target)
        };
        result.content = vec![ContentBlock::text(note)];
        let mut result = tag(
            result,
            crate::outcome::Outcome::Scheduled,
            trace_id,
            Some(&self.operation_id),
        );
        if let Some(meta) = result.meta.as_mut()
            && let Some(guard) = meta.0.get_mut("guard")
        {
            guard["dueAt"] = rfc3339(self.due_at).into();
        }
        result
    }
}

impl Withdrawal {
    /// The model's result for a withdrawal of `operation_id` under `trace_id`, tagged with
    /// its outcome: structured content when the call is withdrawn, else an `isError` result
    /// with a stable code (`ALREADY_RAN`, `OPERATION_NOT_FOUND`).
    pub fn into_result(self, operation_id: &str, trace_id: &str) -> CallToolResult {
        let outcome = self.outcome();
        let result = match self {
            Withdrawal::Withdrawn { call } => {
                let mut done = CallToolResult::structured(json!({
                    "operation_id": call.operation_id,
                    "status": Status::Withdrawn.as_str(),
                    "tool": call.tool,
                    "target": call.target,
                    "was_due_at": rfc3339(call.due_at),
                }));
                done.content = vec![ContentBlock::text(format!(
                    "Withdrawn: {} on {} will not run.",
                    call.tool, call.target
                ))];
                done
            }
            Withdrawal::AlreadyWithdrawn { call, at } => {
                let mut done = CallToolResult::structured(json!({
                    "operation_id": call.operation_id,
                    "status": Status::Withdrawn.as_str(),
                    "already_withdrawn": true,
                    "withdrawn_at": rfc3339(at),
                    "tool": call.tool,
                    "target": call.target,
                }));
                done.content = vec![ContentBlock::text(format!(
                    "Already withdrawn at {}: {} on {} will not run.",
                    rfc3339(at),
                    call.tool,
                    call.target
                ))];
                done
            }
            Withdrawal::AlreadyRan {
                call,
                status,
                at,
                result,
            } => {
                let what = match status {
                    Status::Ran => format!("it ran at {}", rfc3339(at)),
                    Status::StateChanged => format!(
                        "it came due at {} and did not run, because {} changed since the user confirmed",
                        rfc3339(at),
                        call.target
                    ),
                    _ => format!("it came due at {} and could not run", rfc3339(at)),
                };
                let mut refused = ToolError::new(
                    Code::AlreadyRan,
                    format!(
                        "Nothing was withdrawn: {} on {} is no longer waiting, {what}. Its outcome is in this result.",
                        call.tool, call.target
                    ),
                )
                .into_result();
                refused.structured_content = Some(json!({
                    "operation_id": call.operation_id,
                    "status": status.as_str(),
                    "ended_at": rfc3339(at),
                    "tool": call.tool,
                    "target": call.target,
                    "result": result,
                }));
                refused
            }
            Withdrawal::NotFound => ToolError::new(
                Code::OperationNotFound,
                format!(
                    "Nothing was withdrawn: no deferred call {operation_id} belongs to you. Use the operation_id the tool's result named."
                ),
            )
            .into_result(),
        };
        tag(result, outcome, trace_id, Some(operation_id))
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::CallToolResult;
    use serde_json::json;

    use super::super::{Deferred, Scheduled, Status, Withdrawal};
    use crate::{error::Code, outcome::Outcome};

    fn call() -> Deferred {
        Deferred {
            operation_id: "7c1e".into(),
            tool: "close_account".into(),
            target: "checking".into(),
            created_at: 1_796_299_880_000,
            due_at: 1_796_300_000_000,
        }
    }

    fn text(result: &CallToolResult) -> String {
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect()
    }

    #[test]
    fn the_answer_names_the_time_the_tool_and_the_id() {
        let scheduled = Scheduled {
            operation_id: "7c1e".into(),
            due_at: 1_796_300_000_000,
        };
        assert_eq!(
            scheduled.note("close_account", "checking"),
            "Scheduled for 2026-12-03 12:13 UTC: close_account on checking runs then, not now. To withdraw it, call withdraw with operation_id 7c1e before 2026-12-03T12:13:20Z; nothing runs then."
        );
    }

    #[test]
    fn every_ending_is_tagged_and_every_refusal_has_its_code() {
        let cases = [
            (
                Withdrawal::Withdrawn { call: call() },
                None,
                "Withdrawn: close_account on checking will not run.",
            ),
            (
                Withdrawal::AlreadyWithdrawn {
                    call: call(),
                    at: 1_796_299_900_000,
                },
                None,
                "Already withdrawn at 2026-12-03T12:11:40Z",
            ),
            (
                Withdrawal::AlreadyRan {
                    call: call(),
                    status: Status::Ran,
                    at: 1_796_300_001_000,
                    result: json!({"content": []}),
                },
                Some(Code::AlreadyRan),
                "is no longer waiting, it ran at 2026-12-03T12:13:21Z",
            ),
            (
                Withdrawal::AlreadyRan {
                    call: call(),
                    status: Status::StateChanged,
                    at: 1_796_300_001_000,
                    result: json!("checking changed"),
                },
                Some(Code::AlreadyRan),
                "did not run, because checking changed since the user confirmed",
            ),
            (
                Withdrawal::NotFound,
                Some(Code::OperationNotFound),
                "no deferred call 7c1e belongs to you",
            ),
        ];
        for (withdrawal, code, says) in cases {
            let outcome = withdrawal.outcome();
            let result = withdrawal.into_result("7c1e", "t-1");
            assert_eq!(Outcome::of(&result), Some(outcome));
            assert_eq!(result.is_error == Some(true), code.is_some(), "{result:?}");
            assert!(text(&result).contains(says), "{}", text(&result));
            if let Some(code) = code {
                assert!(
                    text(&result).starts_with(&format!("[{code}] ")),
                    "{}",
                    text(&result)
                );
            }
            assert_eq!(result.meta.unwrap().0["guard"]["operationId"], "7c1e");
        }
    }
}
