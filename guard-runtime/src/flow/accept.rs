//! Step 7: the human's answer. Decline and cancel end the call as outcomes; an accept is
//! revalidated on the server in the documented order (schema, typed name, checkbox, rules)
//! and committed to the audit log before the proof can exist.

use rmcp::model::{CallToolResponse, ElicitResult, ElicitationAction};
use serde_json::Value;

use super::{ConfirmKind, Flow, Rules, asked::Unspent};
use crate::{
    error::{Code, ToolError},
    form::{DefaultValue, FieldKind, FieldRole, Form, FormSpec},
    outcome::{Outcome, Step},
    validate::{TypedName, compare_typed, validate},
};

impl<F: Form> Flow<'_, F> {
    /// The form's static roles must match the confirmation kind. The macro checks this at
    /// compile time; checking again here keeps the flow fail-closed for any form.
    pub(super) fn roles_hold(&self, expected: Option<&str>) -> Step<()> {
        let broken = match roles_problem(F::SPEC, self.spec.confirm) {
            Some(problem) => Some(problem),
            None if self.spec.confirm == ConfirmKind::TypeToConfirm && expected.is_none() => {
                Some("type_to_confirm has no target text to compare")
            }
            None => None,
        };
        match broken {
            None => Ok(()),
            Some(problem) => {
                tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, form = F::SPEC.name, problem, "form roles do not match the confirmation kind");
                Err(self.refuse(
                    Outcome::Misconfigured,
                    ToolError::new(
                        Code::InvalidState,
                        format!(
                            "{}: {} is misconfigured on the server, so it cannot ask for confirmation (trace_id {}). Tell the operator.",
                            self.nothing_done_first(),
                            self.spec.name, self.trace_id
                        ),
                    ),
                ))
            }
        }
    }

    /// The accept path, in the documented order: schema, typed name, checkbox, rules.
    pub(super) fn accept(
        &self,
        content: Option<&Value>,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Step<F> {
        revalidate(content, expected, rules).map_err(|reason| self.invalid(reason))
    }
}

/// An answer to `F`'s question revalidated in the documented order (schema, typed name,
/// checkbox, rules): the form, or why it is refused. Run on every accept, and again on the
/// stored answer when a deferred call comes due.
pub(super) fn revalidate<F: Form>(
    content: Option<&Value>,
    expected: Option<&str>,
    rules: Option<Rules<F>>,
) -> Result<F, String> {
    let object = validate(F::SPEC, content)
        .map_err(|problems| format!("the form answer is invalid: {}", problems.join("; ")))?;
    if let (Some(field), Some(expected)) =
        (F::SPEC.field_with_role(FieldRole::ConfirmText), expected)
    {
        let typed = object
            .get(field.name)
            .and_then(Value::as_str)
            .unwrap_or_default();
        match compare_typed(typed, expected) {
            TypedName::Matches => {}
            TypedName::Invisible => {
                return Err(format!(
                    "the typed name {typed:?} contains invisible characters (such as \
                     zero-width spaces or joiners); type {expected:?} again without them"
                ));
            }
            TypedName::Differs => {
                return Err(format!(
                    "the typed name {typed:?} does not match {expected:?} exactly"
                ));
            }
        }
    }
    for field in F::SPEC
        .fields
        .iter()
        .filter(|f| f.role == FieldRole::Checkbox)
    {
        if object.get(field.name) != Some(&Value::Bool(true)) {
            return Err(format!(
                "the confirmation box `{}` was not ticked",
                field.name
            ));
        }
    }
    let form = F::from_valid(object)?;
    if let Some(rules) = rules {
        rules(&form)?;
    }
    Ok(form)
}

impl<F> Flow<'_, F> {
    /// Writes the `accepted` record and waits until the log holds it: an effect never runs
    /// unrecorded, even if the process stops during it. A log that cannot take it ends the
    /// call before the proof exists.
    pub(super) async fn commit_accepted(&self, unspent: Option<Unspent>) -> Step<()> {
        let event = self.event(Outcome::Accepted, "", None);
        let written = match unspent {
            None => self.guard.record_written(event).await.map(|()| true),
            // A 2026-07-28 accept: its state is spent in the same commit, or it was a replay
            // and nothing is written.
            Some(Unspent { nonce, ttl }) => {
                self.guard.record_written_spending(event, &nonce, ttl).await
            }
        };
        if written == Ok(false) {
            return Err(self.replayed());
        }
        if let Err(error) = written {
            tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, %error, "the confirmation could not be written to the audit log; the effect does not run");
            return Err(self.refuse(
                Outcome::AuditFailed,
                ToolError::new(
                    Code::Unavailable,
                    format!(
                        "{}: the server could not write the confirmation of {} to its audit log, and nothing runs unrecorded (trace_id {}). Tell the operator, then call the tool again.",
                        self.nothing_done_first(),
                        self.spec.name, self.trace_id
                    ),
                ),
            ));
        }
        Ok(())
    }

    /// Decline and cancel end the call as outcomes; an accept goes on with its content.
    pub(super) fn accepted(&self, answer: ElicitResult) -> Step<Option<Value>> {
        match answer.action {
            ElicitationAction::Decline => Err(self.natural(
                Outcome::Declined,
                self.spec.on_decline.map(str::to_owned).unwrap_or_else(|| {
                    format!(
                        "The user declined; {} ({} did not run).",
                        self.nothing_done(),
                        self.spec.name
                    )
                }),
            )),
            ElicitationAction::Accept => Ok(answer.content),
            // Cancel, and any action a newer client may invent: nothing runs.
            _ => Err(self.cancelled()),
        }
    }

    /// An answer that failed revalidation: `INVALID_CONFIRMATION`, or `INVALID_ANSWER` for
    /// an `#[ask]` question, where nothing was being confirmed.
    pub(super) fn invalid(&self, reason: String) -> Box<CallToolResponse> {
        let code = if self.seen().question {
            Code::InvalidAnswer
        } else {
            Code::InvalidConfirmation
        };
        self.refuse(
            Outcome::InvalidAnswer,
            ToolError::new(
                code,
                format!(
                    "{}: {reason}. Call the tool again to be asked afresh.",
                    self.nothing_done_first()
                ),
            ),
        )
    }
}

/// What is wrong with `form`'s roles for `kind`, if anything. A `const fn`, so the macro can
/// make a mismatch a compile error from the same description the flow enforces.
pub const fn roles_problem(form: &FormSpec, kind: ConfirmKind) -> Option<&'static str> {
    let (mut checkboxes, mut typed) = (0, 0);
    let mut i = 0;
    while i < form.fields.len() {
        let field = &form.fields[i];
        match field.role {
            FieldRole::Checkbox => {
                if !matches!(field.kind, FieldKind::Boolean) || field.optional {
                    return Some(
                        "a `#[form(checkbox)]` field must be a plain `bool`: the human ticks it",
                    );
                }
                if matches!(field.default, Some(DefaultValue::Bool(true))) {
                    return Some(
                        "a `#[form(checkbox)]` field cannot default to `true`: a pre-ticked box is consent the human never gave",
                    );
                }
                checkboxes += 1;
            }
            FieldRole::ConfirmText => {
                if !matches!(field.kind, FieldKind::String { .. }) || field.optional {
                    return Some(
                        "a `#[form(confirm_text)]` field must be a plain `String`: the human types the target into it",
                    );
                }
                if field.default.is_some() {
                    return Some(
                        "a `#[form(confirm_text)]` field cannot have a default: a pre-filled name is typed by nobody",
                    );
                }
                typed += 1;
            }
            FieldRole::Plain => {}
        }
        i += 1;
    }
    match kind {
        ConfirmKind::Checkbox if checkboxes != 1 => Some(
            "`confirm = \"checkbox\"` needs a form with exactly one `#[form(checkbox)]` `bool` field: use `rmcp_guard::forms::Checkbox` or mark one field of your form",
        ),
        ConfirmKind::TypeToConfirm if typed != 1 => Some(
            "`confirm = \"type_to_confirm\"` needs a form with exactly one `#[form(confirm_text)]` `String` field: use `rmcp_guard::forms::TypeToConfirm` or mark one field of your form",
        ),
        ConfirmKind::Checkbox | ConfirmKind::Form if typed != 0 => Some(
            "this form asks the human to type the target (`#[form(confirm_text)]`) but the tool never compares it: use `confirm = \"type_to_confirm\", target = <argument>`, or remove the field",
        ),
        _ => None,
    }
}
