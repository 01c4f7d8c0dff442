//! What the cases observed: each call's outcome as the client saw it, the readings around
//! it, and how an outcome is quoted in a report.

use rmcp::{model::CallToolResult, service::ServiceError};
use serde_json::Value;

use super::observe::Snapshot;

/// One call's outcome as the client saw it.
pub(super) type CallOutcome = Result<CallToolResult, ServiceError>;

/// How much of an answer's text a report quotes.
const MAX_TEXT: usize = 200;

/// At most [`MAX_TEXT`] characters of `text`, quoted as JSON so a report stays one line
/// per field.
fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(MAX_TEXT).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    serde_json::to_string(&out).unwrap_or(out)
}

/// `ok "text"`, `isError "text"` or the protocol error.
pub(super) fn summarize(outcome: &CallOutcome) -> String {
    match outcome {
        Ok(result) => {
            let text = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                .collect::<Vec<_>>()
                .join("\n");
            if result.is_error == Some(true) {
                format!("isError {}", clip(&text))
            } else {
                format!("ok {}", clip(&text))
            }
        }
        Err(e) => format!("protocol error: {e}"),
    }
}

/// A response as it crossed the wire, for answers the client never saw.
pub(super) fn summarize_wire(answer: &Value) -> String {
    if let Some(content) = answer.get("content").and_then(Value::as_array) {
        let text = content
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let error = answer.get("isError").and_then(Value::as_bool) == Some(true);
        format!("{} {}", if error { "isError" } else { "ok" }, clip(&text))
    } else if answer.get("resultType").and_then(Value::as_str) == Some("input_required") {
        "input required (a question for the human)".to_owned()
    } else if let Some(message) = answer.get("message").and_then(Value::as_str) {
        format!("JSON-RPC error {}", clip(message))
    } else {
        clip(&answer.to_string())
    }
}

/// What case 1 observed: the state, the items and the times around one call.
pub(super) struct Once {
    pub(super) before: Snapshot,
    pub(super) after: Snapshot,
    pub(super) before_items: Snapshot,
    pub(super) after_items: Snapshot,
    pub(super) before_times: Snapshot,
    pub(super) after_times: Snapshot,
    pub(super) outcome: CallOutcome,
    /// The labels of the fixture's observers.
    pub(super) observed: Vec<String>,
}

/// One call of a series and the state after it.
pub(super) struct SeriesCall {
    pub(super) how: String,
    pub(super) outcome: CallOutcome,
    pub(super) after: Snapshot,
}

/// A first call and its repeats.
pub(super) struct Series {
    pub(super) before: Snapshot,
    pub(super) before_items: Snapshot,
    pub(super) after_items: Snapshot,
    pub(super) before_times: Snapshot,
    pub(super) after_times: Snapshot,
    /// The first call, then the repeats; never empty.
    pub(super) calls: Vec<SeriesCall>,
}

impl Series {
    pub(super) fn last(&self) -> &Snapshot {
        &self.calls[self.calls.len() - 1].after
    }

    pub(super) fn repeat_summaries(&self) -> String {
        self.calls
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, c)| format!("repeat {i}: {}", summarize(&c.outcome)))
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// What one run of case 5 observed: the state around it and every call's outcome.
pub(super) struct Burst {
    pub(super) before: Snapshot,
    pub(super) after: Snapshot,
    pub(super) outcomes: Vec<CallOutcome>,
}

/// What case 4 observed: the state before, after the dropped call and after the retry,
/// what the dropped call did, and the retry's outcome.
pub(super) struct Retry {
    pub(super) before: Snapshot,
    pub(super) middle: Snapshot,
    pub(super) after: Snapshot,
    pub(super) first: String,
    pub(super) second: CallOutcome,
}

/// What case 5 observed: how many calls each run held, how many runs it could take, and
/// the last run made (the first that raced, or the last of all), or why a run failed.
pub(super) struct Races {
    pub(super) in_flight: usize,
    pub(super) runs: usize,
    pub(super) last: Result<(usize, Burst), String>,
}
