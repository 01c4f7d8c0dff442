//! A disclosing tool (`#[read_only(discloses = ...)]`) through the same steps as a
//! destructive one: its boundary is the preview (step 4), checked against the caps before
//! anyone is asked; the question and its answer are the flow's own (steps 5–7); the boundary
//! is computed again before the handler runs (step 8); and what the handler returns is
//! counted, checked against the caps and the boundary the human approved, and recorded
//! without its content (steps 9 and 10); so is an error it returns (`failed.rs`).

mod budget;

use rmcp::{
    handler::server::tool::IntoCallToolResult,
    model::{CallToolResponse, CallToolResult},
};
use serde::de::DeserializeOwned;
use serde_json::json;

mod failed;

use super::{Accepted, Flow, Incoming, Previewed};
use crate::{
    disclose::{Boundary, Inner, IntoDisclosed, Noun, Shown, Spec, Standing},
    error::{Code, ToolError},
    form::Form,
    outcome::{Outcome, Step},
    preview::{Effect, Preview},
};

impl<F: Form> Flow<'_, F> {
    /// Step 4: the boundary as the human will read it. Nothing to show ends the call without
    /// asking; so does a stated count above the per-call cap or the session's room.
    pub async fn bound(
        &self,
        spec: &'static Spec,
        incoming: Incoming,
        boundary: Result<Boundary, ToolError>,
    ) -> Step<Previewed> {
        let (preview, stated) = self.told_boundary(spec, boundary);
        let shown = self.begin(incoming, preview)?;
        let (stated, noun) = stated.unwrap_or_default();
        if let Some(cap) = spec.max_items.filter(|cap| stated > *cap) {
            return Err(self.over_cap(format!(
                "Nothing was shown: this call would show {stated} {}, and {} shows at most \
                 {cap} per call. Ask for at most {cap} (a narrower range or a smaller limit).",
                noun.of(stated),
                self.spec.name
            )));
        }
        let Some(cap) = spec.session_max_items else {
            return Ok(shown);
        };
        let session = self.session()?;
        let so_far = self.so_far(&session).await;
        if so_far.shown.items.saturating_add(stated) > cap {
            return Err(self.over_session_cap(cap, so_far, stated, &noun));
        }
        Ok(shown)
    }

    /// Step 8: the boundary must still be the one the human approved; the answer is then
    /// committed to the audit log before anything is shown.
    pub async fn rebound(
        &self,
        spec: &'static Spec,
        accepted: Accepted<F>,
        again: Result<Boundary, ToolError>,
    ) -> Step<ApprovedBoundary> {
        let effect = accepted.caller.effect.clone();
        // The re-check passes only on the boundary the human approved, count and all.
        let (again, stated) = self.told_boundary(spec, again);
        self.recheck(accepted, again).await?;
        Ok(ApprovedBoundary {
            effect,
            stated: stated.unwrap_or_default(),
        })
    }

    /// The call's arguments read again from the request, for the boundary after the
    /// handler (which took the first reading): the same JSON read the same way.
    pub fn arguments_again<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        T::deserialize(&self.call.arguments)
            .map_err(|e| ToolError::arguments_do_not_fit(self.spec.name, &e.to_string()))
    }
}

/// The boundary as the human approved it and step 8 found it again: what the data must
/// still be once the handler has read it. Only [`Flow::rebound`] builds one.
pub struct ApprovedBoundary {
    effect: Effect,
    /// The count the human approved, and what its items are.
    stated: (u64, Noun),
}

impl<F> Flow<'_, F> {
    /// Steps 9 and 10: the handler's result is shown only if its count is within what the
    /// human was told and the per-call caps (items, and bytes of the serialized result,
    /// counted here), and the session's caps still hold with it (checked and counted in one
    /// step; for a caller's budget period, in the operation store when there is one: see
    /// [`crate::disclose::Session`]). The audit record holds the counts and a digest, never
    /// the content.
    ///
    /// `after` is the boundary computed once more after the handler returned: a source that
    /// changed while the handler read it (a log rewritten, a file swapped) is withheld, so
    /// what is shown is always what the human approved.
    pub async fn finish_disclosed(
        &self,
        spec: &'static Spec,
        approved: ApprovedBoundary,
        result: impl IntoDisclosed,
        after: Result<Boundary, ToolError>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let (items, response) = result.into_disclosed();
        let (Some(items), Ok(CallToolResponse::Complete(result))) = (items, &response) else {
            return self
                .finish_failed(spec, approved, items, response, after)
                .await;
        };
        if result.is_error == Some(true) {
            return self
                .finish_failed(spec, approved, Some(items), response, after)
                .await;
        }
        let bytes = serde_json::to_vec(result).map_or(u64::MAX, |b| b.len() as u64);
        if let Some(changed) = self.changed_while_read(spec, &approved, after) {
            self.withheld(spec, Shown { items, bytes });
            return Ok(*changed);
        }
        let now = Shown { items, bytes };
        let (stated, noun) = approved.stated.clone();
        let name = self.spec.name;
        let over = if items > stated {
            tracing::warn!(trace_id = %self.trace_id, tool = name, items, stated, "a disclosing handler returned more items than its boundary stated; nothing was shown");
            Some(format!(
                "Nothing was shown: {name} returned {items} {}, more than the {stated} the \
                 user approved. Call the tool again so the user sees the current count.",
                noun.of(items)
            ))
        } else if let Some(cap) = spec.max_items.filter(|cap| items > *cap) {
            Some(format!(
                "Nothing was shown: {name} returned {items} {}, and it shows at most {cap} \
                 per call. Ask for at most {cap}.",
                noun.of(items)
            ))
        } else {
            spec.max_bytes.filter(|cap| bytes > *cap).map(|cap| {
                format!(
                    "Nothing was shown: the result of {name} is {bytes} bytes, and it shows at \
                     most {cap} bytes per call. Ask for less (a narrower range or a smaller limit)."
                )
            })
        };
        if let Some(text) = over {
            self.withheld(spec, Shown { items, bytes });
            return Ok(*self.over_cap(text));
        }
        let session = match self.session() {
            Ok(session) => session,
            Err(refused) => return Ok(*refused),
        };
        let taken = match self.take(&session, spec, now).await {
            Ok(taken) => taken,
            Err(refused) => {
                self.withheld(spec, now);
                return Ok(*refused);
            }
        };
        match taken {
            Ok(total) => {
                self.seen().disclosed = Some(json!({
                    "class": spec.class.as_str(),
                    "items": items,
                    "bytes": bytes,
                    "session_items": total.shown.items,
                    "session_bytes": total.shown.bytes,
                }));
                let result: CallToolResult = result.clone();
                self.finish(result.into_call_tool_result())
            }
            Err(before) => {
                self.withheld(spec, now);
                let text = match spec
                    .session_max_items
                    .filter(|cap| before.shown.items.saturating_add(items) > *cap)
                {
                    Some(cap) => return Ok(*self.over_session_cap(cap, before, items, &noun)),
                    None => format!(
                        "Nothing was shown: {name} shows at most {} bytes per session, {} were \
                         shown already and this result is {bytes} more. {}",
                        spec.session_max_bytes.unwrap_or_default(),
                        before.shown.bytes,
                        starts_again(&before)
                    ),
                };
                Ok(*self.over_cap(text))
            }
        }
    }

    /// Records that a result of `shown` items and bytes was withheld: counted for the audit,
    /// shown to nobody.
    fn withheld(&self, spec: &'static Spec, shown: Shown) {
        self.seen().disclosed = Some(json!({
            "class": spec.class.as_str(),
            "items": shown.items,
            "bytes": shown.bytes,
            "withheld": true,
        }));
    }

    /// The refusal of a result whose source is no longer what the human approved, once the
    /// handler read it; `None` when it still is.
    fn changed_while_read(
        &self,
        spec: &'static Spec,
        approved: &ApprovedBoundary,
        after: Result<Boundary, ToolError>,
    ) -> Option<Box<CallToolResponse>> {
        let target = approved.effect.subject().shown();
        let reason = match after.map(|b| compose(spec, b)) {
            Ok((Preview::Effect(now), _)) if now == approved.effect => return None,
            Ok(_) => format!("{target} changed"),
            Err(error) => format!("{target} could not be read again ({})", error.message()),
        };
        tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, %reason, "a disclosing handler's source changed while it read; nothing was shown");
        Some(self.refuse(
            Outcome::StateChanged,
            ToolError::new(
                Code::StateChanged,
                format!(
                    "Nothing was shown: {reason} while {} read it, so what it read may not be \
                     what the user approved. Call the tool again to show the user the current \
                     state.",
                    self.spec.name
                ),
            ),
        ))
    }

    /// The boundary composed into the effect the human reads, and its count and noun for
    /// the checks; a call whose boundary states data says "nothing was shown" when it ends.
    fn told_boundary(
        &self,
        spec: &'static Spec,
        boundary: Result<Boundary, ToolError>,
    ) -> (Result<Preview, ToolError>, Option<(u64, Noun)>) {
        let (preview, stated) = match boundary {
            Ok(boundary) => compose(spec, boundary),
            Err(error) => return (Err(error), None),
        };
        if stated.is_some() {
            self.seen().shows = true;
        }
        (Ok(preview), stated)
    }

    fn over_session_cap(
        &self,
        cap: u64,
        before: Standing,
        more: u64,
        noun: &Noun,
    ) -> Box<CallToolResponse> {
        self.over_cap(format!(
            "Nothing was shown: {} shows at most {cap} {} per session, {} were shown \
             already and this call would show {more} more. {}",
            self.spec.name,
            noun.of(cap),
            before.shown.items,
            starts_again(&before)
        ))
    }

    fn over_cap(&self, text: String) -> Box<CallToolResponse> {
        self.natural(Outcome::OverDisclosureCap, text)
    }
}

/// When a spent session's budget starts again, for the human and the model to read.
pub(super) fn starts_again(budget: &Standing) -> String {
    match budget.ends {
        Some(ends) => format!(
            "The limit starts again at {}: here a session is your budget period of 24 \
             hours, on every connection and server of this service; tell the user.",
            crate::rfc3339::minute(ends)
        ),
        None => {
            "The limit starts again in a new session (a new connection); tell the user.".to_owned()
        }
    }
}

/// The effect the human reads for `boundary`, and its count and noun (none for a boundary
/// with nothing to show).
fn compose(spec: &Spec, boundary: Boundary) -> (Preview, Option<(u64, Noun)>) {
    let (target, scope, account, items, noun, state, grant_scope) = match boundary.inner {
        Inner::Nothing(text) => return (Preview::Nothing(text), None),
        Inner::Shown {
            target,
            scope,
            account,
            items,
            noun,
            state,
            grant_scope,
        } => (target, scope, account, items, noun, state, grant_scope),
    };
    let read_as = account
        .map(|a| format!(", read as {a}"))
        .unwrap_or_default();
    let summary = format!(
        "Show the agent {scope} of {target}{read_as}: {items} {}.\n\n{} Once shown, it \
         cannot be taken back.",
        noun.of(items),
        spec.class.sentence()
    );
    let preview = Preview::disclosure(target, summary, state);
    let preview = match grant_scope {
        Some(words) => preview.scope(spec.grant_scope(&words, &read_as, &noun)),
        None => preview,
    };
    (preview, Some((items, noun)))
}
