//! Grants in the call (see [`crate::grant`]): before asking, a grant of the caller's over
//! this tool and the preview's scope takes one use and the call runs on the answer the human
//! gave when they opened it, revalidated as any answer; otherwise the question offers one,
//! and an accept that chose it opens it once the re-check passed. Every ending of a call a
//! grant touched says so to the model, in its text and in `_meta.guard.grant`, and the
//! audit records name the grant.

use rmcp::model::{CallToolResult, ContentBlock, ElicitationSchema, PrimitiveSchemaDefinition};
use serde_json::{Value, json};

use super::{Flow, GrantSpec, Rules, accept::revalidate, caller::Caller};
use crate::{
    error::{Code, ToolError},
    form::Form,
    grant::Grant,
    outcome::{Outcome, Step},
    person::Person,
    preview::Effect,
};

/// The question's field in which the human chooses how far their answer goes. Forms of
/// tools that offer grants cannot have a field of this name (checked at compile time).
pub const GRANT_FIELD: &str = "guard_grant";

/// The choice that answers this call only (the default).
const ONCE: &str = "once";
/// The choice that opens a grant.
const GRANT: &str = "grant";

/// What a grant did in this call.
#[derive(Debug, Clone)]
pub(super) enum Note {
    /// The human opened this grant with their answer.
    Opened(Grant),
    /// This call ran under this grant (as it is after the use), and nobody was asked.
    Used(Grant),
    /// The human chose a grant and it could not be stored: the next call asks again.
    NotOpened,
}

impl<F: Form> Flow<'_, F> {
    /// Before asking: a grant of the caller's covering this tool and the effect's scope
    /// takes one use, and the call goes on with the answer the human gave when they opened
    /// it, and its id. Only before a question: an answering round goes by its answer.
    /// Without a store, a scope, an identity or a grant the human is asked; a store that
    /// cannot be read asks too (asking is always safe).
    pub(super) async fn granted(&self, caller: &Caller) -> Option<(Value, String)> {
        let (Some(_), Some(scope), Some(grants), Some(holder)) = (
            self.spec.grant,
            caller.effect.subject().grant_scope(),
            self.guard.grants(),
            caller.person.as_ref(),
        ) else {
            return None;
        };
        // A round that answers a question carries the human's answer to this very call: a
        // grant opened meanwhile does not override it (a decline stays a decline). The
        // holder is known all the same, so the answer may open a grant.
        if self.opened.is_some() {
            return None;
        }
        let now = crate::store::now_ms();
        let taken = match grants
            .take(holder, self.spec.name, scope, now, &self.trace_id)
            .await
        {
            Ok(taken) => taken?,
            Err(error) => {
                tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, %error, "grants could not be read; the human is asked");
                return None;
            }
        };
        let grant_id = taken.grant.grant_id.clone();
        self.seen().grant = Some(Note::Used(taken.grant));
        Some((taken.answer, grant_id))
    }

    /// A grant's kept answer revalidated as any answer is, with a refusal that names the
    /// grant.
    pub(super) fn granted_form(
        &self,
        answer: &Value,
        grant_id: &str,
        rules: Option<Rules<F>>,
    ) -> Step<F> {
        revalidate::<F>(Some(answer), None, rules).map_err(|reason| {
            self.refuse(
                Outcome::InvalidAnswer,
                ToolError::new(
                    Code::InvalidConfirmation,
                    format!(
                        "{}: the answer kept by grant {grant_id} no longer passes the form's checks ({reason}). Revoke the grant, then call the tool again to ask the user.",
                        self.nothing_done_first(),
                    ),
                ),
            )
        })
    }
}

impl<F> Flow<'_, F> {
    /// The grant the question offers for `effect`, if any: the tool allows one, the guard
    /// keeps grants, the preview states a scope, and the caller (`holder`) is known.
    fn offer<'e>(
        &self,
        effect: &'e Effect,
        holder: Option<&Person>,
    ) -> Option<(GrantSpec, &'e str)> {
        let spec = self.spec.grant?;
        let scope = effect.subject().grant_scope()?;
        self.guard.operations()?;
        holder?;
        Some((spec, scope))
    }

    /// The form's schema with the grant's choice added, when one is offered.
    pub(super) fn offering(
        &self,
        caller: &Caller,
        mut schema: ElicitationSchema,
    ) -> ElicitationSchema {
        let Some((spec, scope)) = self.offer(&caller.effect, caller.person.as_ref()) else {
            return schema;
        };
        let field = json!({
            "type": "string",
            "title": "How far this answer goes",
            "oneOf": [
                {"const": ONCE, "title": "This call only"},
                {"const": GRANT, "title": spec.offer(self.spec.name, scope)},
            ],
            "default": ONCE,
        });
        let field: PrimitiveSchemaDefinition = serde_json::from_value(field)
            .unwrap_or_else(|e| unreachable!("guard built an invalid grant choice: {e}"));
        schema.properties.insert(GRANT_FIELD.to_owned(), field);
        if let Some(order) = &mut schema.property_order {
            order.push(GRANT_FIELD.to_owned());
        }
        schema
    }

    /// The answer without the grant's choice, and the content to open a grant with if the
    /// human chose one. A choice the question did not offer is an invalid answer.
    pub(super) fn grant_choice(
        &self,
        caller: &Caller,
        content: Option<Value>,
    ) -> Step<(Option<Value>, Option<Value>)> {
        let Some(Value::Object(mut object)) = content else {
            return Ok((content, None));
        };
        let Some(choice) = object.remove(GRANT_FIELD) else {
            return Ok((Some(Value::Object(object)), None));
        };
        if self.offer(&caller.effect, caller.person.as_ref()).is_none() {
            return Err(self.invalid(format!(
                "the answer has a field `{GRANT_FIELD}` the question did not ask for"
            )));
        }
        let content = Value::Object(object);
        match choice.as_str() {
            Some(ONCE) => Ok((Some(content), None)),
            Some(GRANT) => Ok((Some(content.clone()), Some(content))),
            _ => Err(self.invalid(format!(
                "`{GRANT_FIELD}` must be \"{ONCE}\" or \"{GRANT}\", not {choice}"
            ))),
        }
    }

    /// After the re-check of a call whose human chose a grant: the grant opens over the
    /// scope the re-checked preview states. A grant that cannot be stored leaves the call as
    /// it was (it was approved) and the answer says the next call asks again.
    pub(super) async fn open_grant(&self, now: &Effect, holder: Option<&Person>, answer: &Value) {
        let opened = match (self.offer(now, holder), self.guard.grants(), holder) {
            (Some((spec, scope)), Some(grants), Some(holder)) => grants
                .open(
                    holder,
                    self.spec.name,
                    scope,
                    answer,
                    (spec.calls, spec.within),
                    crate::store::now_ms(),
                    &self.trace_id,
                )
                .await
                .map_err(|e| e.to_string()),
            _ => Err("the grant is no longer offered".to_owned()),
        };
        let note = match opened {
            Ok(grant) => Note::Opened(grant),
            Err(reason) => {
                tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, %reason, "the grant the human chose was not stored");
                Note::NotOpened
            }
        };
        self.seen().grant = Some(note);
    }

    /// The grant this call opened or ran under, for its audit records.
    pub(super) fn grant_id(&self) -> Option<String> {
        match &self.seen().grant {
            Some(Note::Opened(grant) | Note::Used(grant)) => Some(grant.grant_id.clone()),
            _ => None,
        }
    }

    /// `result` (already tagged) with what a grant did in this call: a sentence for the
    /// model and `_meta.guard.grant`, so the transcript never hides that nobody was asked.
    pub(super) fn note_grant(&self, mut result: CallToolResult) -> CallToolResult {
        let Some(note) = self.seen().grant.clone() else {
            return result;
        };
        let (text, meta) = match &note {
            Note::Used(grant) => (
                format!(
                    "Nobody was asked: {} covered this call; the user opened it earlier and can revoke it.",
                    grant.describe()
                ),
                Some(meta("used", grant)),
            ),
            Note::Opened(grant) => (
                format!(
                    "The user opened {}: later calls of {} on {} run without asking until then, unless the user revokes it.",
                    grant.describe(),
                    grant.tool,
                    grant.scope
                ),
                Some(meta("opened", grant)),
            ),
            Note::NotOpened => (
                format!(
                    "The grant the user chose could not be stored, so the next call asks again (trace_id {}).",
                    self.trace_id
                ),
                None,
            ),
        };
        result.content.push(ContentBlock::text(text));
        if let (Some(meta), Some(all)) = (meta, result.meta.as_mut())
            && let Some(Value::Object(guard)) = all.0.get_mut("guard")
        {
            guard.insert("grant".into(), meta);
        }
        result
    }
}

/// `_meta.guard.grant`: which grant, what it did, and what is left of it.
fn meta(what: &str, grant: &Grant) -> Value {
    json!({
        "grantId": grant.grant_id,
        "use": what,
        "scope": grant.scope,
        "callsLeft": grant.left(),
        "until": crate::rfc3339::utc(grant.expires_at),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::GrantSpec;

    #[test]
    fn the_offer_states_count_tool_scope_and_time() {
        let spec = GrantSpec {
            within: Duration::from_secs(600),
            calls: 20,
        };
        assert_eq!(
            spec.offer("delete_file", "files directly in folder reports/"),
            "This and up to 20 more calls of delete_file on files directly in folder reports/, for 10 minutes, without asking again"
        );
        let one = GrantSpec {
            within: Duration::from_secs(3600),
            calls: 1,
        };
        assert_eq!(
            one.offer("t", "s"),
            "This and 1 more call of t on s, for 1 hour, without asking again"
        );
        let odd = GrantSpec {
            within: Duration::from_secs(90),
            calls: 2,
        };
        assert!(odd.offer("t", "s").contains("for 90 seconds"));
    }
}
