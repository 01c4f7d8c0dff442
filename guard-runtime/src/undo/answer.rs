//! What the model is told: after an effect, how to undo it and until when; after an undo,
//! what became of it, with a stable code for every refusal and guard's tag.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::{Opened, TOOL, Undo};
use crate::{
    error::{Code, ToolError},
    ops::rfc3339,
    outcome::tag,
};

impl Opened {
    /// The sentence the effect's result ends with: the undo tool, this window's id and its
    /// deadline.
    pub fn note(&self) -> String {
        format!(
            "To undo this, call {TOOL} with operation_id {} before {}; after that it is final.",
            self.operation_id,
            rfc3339(self.expires_at)
        )
    }
}

impl Undo {
    /// The model's result for an undo of `operation_id` under `trace_id`, tagged with its
    /// outcome: structured content when the window is undone, else an `isError` result with
    /// a stable code (`UNDO_EXPIRED`, `OPERATION_NOT_FOUND`, or the author's own refusal).
    pub fn into_result(self, operation_id: &str, trace_id: &str) -> CallToolResult {
        let outcome = self.outcome();
        let result = match self {
            Undo::Undone { window, result } => {
                let mut done = CallToolResult::structured(json!({
                    "operation_id": window.operation_id,
                    "status": "UNDONE",
                    "tool": window.tool,
                    "target": window.target,
                    "result": result,
                }));
                done.content = vec![ContentBlock::text(format!(
                    "Undone: the effect of {} on {} was reversed.",
                    window.tool, window.target
                ))];
                done
            }
            Undo::AlreadyUndone { window, result, at } => {
                let mut done = CallToolResult::structured(json!({
                    "operation_id": window.operation_id,
                    "status": "UNDONE",
                    "already_undone": true,
                    "undone_at": rfc3339(at),
                    "tool": window.tool,
                    "target": window.target,
                    "result": result,
                }));
                done.content = vec![ContentBlock::text(format!(
                    "Already undone at {}: the effect of {} on {} was reversed then; nothing ran again.",
                    rfc3339(at),
                    window.tool,
                    window.target
                ))];
                done
            }
            Undo::Purged { window, at } => ToolError::new(
                Code::UndoExpired,
                format!(
                    "Nothing was restored: the undo window of {} on {} closed at {} and the effect was made final at {}. It can no longer be undone.",
                    window.tool,
                    window.target,
                    rfc3339(window.expires_at),
                    rfc3339(at)
                ),
            )
            .into_result(),
            Undo::Expired { window } => ToolError::new(
                Code::UndoExpired,
                format!(
                    "Nothing was restored: the undo window of {} on {} closed at {}, so the effect is final. It can no longer be undone.",
                    window.tool,
                    window.target,
                    rfc3339(window.expires_at)
                ),
            )
            .into_result(),
            Undo::Lost { window, reason, at } => ToolError::new(
                Code::UndoExpired,
                format!(
                    "Nothing was restored: {reason} The undo window of {} on {} ended at {} for that reason, so the effect is final. It can no longer be undone.",
                    window.tool,
                    window.target,
                    rfc3339(at)
                ),
            )
            .into_result(),
            Undo::Refused { window, error } => ToolError::new(
                error.code(),
                format!(
                    "{} Nothing was restored; the undo stays possible until {}.",
                    error.message(),
                    rfc3339(window.expires_at)
                ),
            )
            .into_result(),
            Undo::NotFound => ToolError::new(
                Code::OperationNotFound,
                format!(
                    "Nothing was restored: no undo window {operation_id} belongs to you. Use the operation_id the tool's result named."
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

    use super::super::{Opened, Undo, Window};
    use crate::{
        error::{Code, ToolError},
        outcome::Outcome,
    };

    fn window() -> Window {
        Window {
            operation_id: "0b6f".into(),
            tool: "delete_file".into(),
            target: "old.log".into(),
            data: json!({"trashed": ".trash/1"}),
            created_at: 1_796_299_400_000,
            expires_at: 1_796_300_000_000,
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
    fn the_effects_note_names_the_tool_the_id_and_the_deadline() {
        let opened = Opened {
            operation_id: "0b6f".into(),
            expires_at: 1_796_300_000_000,
        };
        assert_eq!(
            opened.note(),
            "To undo this, call undo with operation_id 0b6f before 2026-12-03T12:13:20Z; after that it is final."
        );
    }

    #[test]
    fn every_ending_is_tagged_and_every_refusal_has_its_code() {
        let cases = [
            (
                Undo::Undone {
                    window: window(),
                    result: json!({"restored": "old.log"}),
                },
                None,
                "Undone: the effect of delete_file on old.log was reversed.",
            ),
            (
                Undo::AlreadyUndone {
                    window: window(),
                    result: json!({}),
                    at: 1_796_299_500_000,
                },
                None,
                "Already undone at 2026-12-03T12:05:00Z",
            ),
            (
                Undo::Purged {
                    window: window(),
                    at: 1_796_300_001_000,
                },
                Some(Code::UndoExpired),
                "closed at 2026-12-03T12:13:20Z and the effect was made final at 2026-12-03T12:13:21Z",
            ),
            (
                Undo::Expired { window: window() },
                Some(Code::UndoExpired),
                "closed at 2026-12-03T12:13:20Z, so the effect is final",
            ),
            (
                Undo::Lost {
                    window: window(),
                    reason: "the trashed copy of old.log was changed in the trash.".into(),
                    at: 1_796_299_500_000,
                },
                Some(Code::UndoExpired),
                "the trashed copy of old.log was changed in the trash. The undo window of delete_file on old.log ended at 2026-12-03T12:05:00Z for that reason, so the effect is final.",
            ),
            (
                Undo::Refused {
                    window: window(),
                    error: ToolError::new(Code::StateChanged, "old.log exists again."),
                },
                Some(Code::StateChanged),
                "old.log exists again. Nothing was restored; the undo stays possible until 2026-12-03T12:13:20Z.",
            ),
            (
                Undo::NotFound,
                Some(Code::OperationNotFound),
                "no undo window 0b6f belongs to you",
            ),
        ];
        for (undo, code, says) in cases {
            let outcome = undo.outcome();
            let result = undo.into_result("0b6f", "t-1");
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
            assert_eq!(result.meta.unwrap().0["guard"]["operationId"], "0b6f");
        }
    }
}
