//! A disclosing handler that failed: its error is read by the model like any result, so it
//! goes through the caps and checks of a success (steps 9 and 10). An error carries no
//! `Disclosed` count the human approved, so its text counts as bytes: against the tool's
//! per-call `max_bytes` (or [`ERROR_MAX_BYTES`] for a tool whose caps are in items only, or
//! which declares none) and its `session_max_bytes`, in the caller's session budget; an `isError`
//! result that does state a count is held to the item caps too. An error over a cap, or
//! read from a source that changed while the handler read it, is withheld, and the record
//! holds its counts, never its text.

use rmcp::model::CallToolResponse;
use serde_json::json;

use super::{ApprovedBoundary, starts_again};
use crate::{
    disclose::{Noun, Shown, Spec},
    flow::Flow,
};

/// The most bytes of an error a disclosing tool without `max_bytes` shows: enough to say
/// what went wrong, never a page of the data it read.
const ERROR_MAX_BYTES: u64 = 4096;

impl<F> Flow<'_, F> {
    /// Steps 9 and 10 for a handler that failed: `response` is its `isError` result or its
    /// protocol error, shown only within the caps and the session's room, and counted in
    /// the caller's session budget (the connection's, or the person's period) like a result. `count` is the items an `isError` result stated.
    pub(super) async fn finish_failed(
        &self,
        spec: &'static Spec,
        approved: ApprovedBoundary,
        count: Option<u64>,
        response: Result<CallToolResponse, rmcp::ErrorData>,
        after: Result<crate::disclose::Boundary, crate::error::ToolError>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let bytes = match &response {
            Ok(CallToolResponse::Complete(result)) => serde_json::to_vec(result),
            Err(error) => serde_json::to_vec(error),
            // An input request or a task the handler built: passed on, as before.
            Ok(_) => return self.finish(response),
        }
        .map_or(u64::MAX, |b| b.len() as u64);
        let now = Shown {
            items: count.unwrap_or(0),
            bytes,
        };
        if let Some(changed) = self.changed_while_read(spec, &approved, after) {
            self.withheld_error(spec, now);
            return Ok(*changed);
        }
        if let Some(text) = self.error_over_cap(spec, &approved.stated, now) {
            self.withheld_error(spec, now);
            return Ok(*self.over_cap(text));
        }
        let name = self.spec.name;
        let session = match self.session() {
            Ok(session) => session,
            Err(refused) => return Ok(*refused),
        };
        let taken = match self.take(&session, spec, now).await {
            Ok(taken) => taken,
            Err(refused) => {
                self.withheld_error(spec, now);
                return Ok(*refused);
            }
        };
        match taken {
            Ok(total) => {
                self.seen().disclosed = Some(json!({
                    "class": spec.class.as_str(),
                    "items": now.items,
                    "bytes": now.bytes,
                    "session_items": total.shown.items,
                    "session_bytes": total.shown.bytes,
                    "error": true,
                }));
                self.finish(response)
            }
            Err(before) => {
                self.withheld_error(spec, now);
                let again = starts_again(&before);
                let text = match spec
                    .session_max_items
                    .filter(|cap| before.shown.items.saturating_add(now.items) > *cap)
                {
                    Some(cap) => format!(
                        "Nothing was shown: {name} failed, and its error states {} {}, more \
                         than the {} left of the {cap} it shows per session; the error was \
                         withheld. Tell the user the call failed. {again}",
                        now.items,
                        approved.stated.1.of(now.items),
                        cap.saturating_sub(before.shown.items)
                    ),
                    None => format!(
                        "Nothing was shown: {name} failed, and its error is {bytes} bytes, more \
                         than the {} bytes left of the {} it shows per session; the error was \
                         withheld. Tell the user the call failed. {again}",
                        spec.session_max_bytes
                            .unwrap_or_default()
                            .saturating_sub(before.shown.bytes),
                        spec.session_max_bytes.unwrap_or_default()
                    ),
                };
                Ok(*self.over_cap(text))
            }
        }
    }

    /// What a failed call's error breaks of the per-call caps, in the words the model reads;
    /// `None` when it is within them.
    fn error_over_cap(&self, spec: &Spec, approved: &(u64, Noun), now: Shown) -> Option<String> {
        let name = self.spec.name;
        let (stated, noun) = approved;
        let stated = *stated;
        if now.items > stated {
            return Some(format!(
                "Nothing was shown: {name} failed, and its error states {} {}, more than the \
                 {stated} the user approved; the error was withheld. Tell the user the call \
                 failed, and call the tool again so the user sees the current count.",
                now.items,
                noun.of(now.items)
            ));
        }
        if let Some(cap) = spec.max_items.filter(|cap| now.items > *cap) {
            return Some(format!(
                "Nothing was shown: {name} failed, and its error states {} {}, and it shows at \
                 most {cap} per call; the error was withheld. Tell the user the call failed; \
                 ask for at most {cap}.",
                now.items,
                noun.of(now.items)
            ));
        }
        let (cap, whose) = match spec.max_bytes {
            Some(cap) => (cap, "it shows at most"),
            None => (
                ERROR_MAX_BYTES,
                "an error of a tool without a byte cap shows at most",
            ),
        };
        (now.bytes > cap).then(|| {
            format!(
                "Nothing was shown: {name} failed, and its error is {} bytes; {whose} {cap} \
                 bytes per call, so the error was withheld. Tell the user the call failed; \
                 asking for less (a narrower range or a smaller limit) may avoid the failure.",
                now.bytes
            )
        })
    }

    /// Records that an error of `shown` items and bytes was withheld, as a result would be:
    /// counted for the audit, shown to nobody, and not in the session's tally.
    fn withheld_error(&self, spec: &'static Spec, shown: Shown) {
        self.withheld(spec, shown);
        if let Some(record) = self.seen().disclosed.as_mut() {
            record["error"] = json!(true);
        }
    }
}
