//! Steps 4–10 for a batch tool (`#[destructive(batch, ...)]`): the preview's items, the cap,
//! one multi-select question, the picks revalidated against what was offered, a per-item
//! re-check, and a per-item report and audit. Built as the same chain of values as the
//! single-target flow: [`ShownBatch`], then [`Chosen`], then the [`Picked`] proof.

use std::collections::{BTreeMap, HashMap, HashSet};

use rmcp::model::{
    CallToolResponse, CallToolResult, ConstTitle, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, EnumSchema, InputRequest, MultiSelectEnumSchema, PrimitiveSchemaDefinition,
    TitledItems, TitledMultiSelectEnumSchema,
};
use serde_json::Value;

use super::{Flow, GuardCall, Incoming, ToolSpec};
use crate::{
    batch::{Batch, ItemReport, Offered, Picked, Report, plural},
    error::{Code, ToolError},
    guard::Guard,
    outcome::{Outcome, Step},
    preview::Terms,
};

/// The answer's one field: the keys of the picked items.
const PICKS: &str = "items";

/// The items the preview found, within the cap, about to be offered. Only
/// [`Flow::begin_batch`] builds one.
pub struct ShownBatch {
    rule: String,
    effect: String,
    offer: Vec<Offered>,
}

/// The human's picks, each one an offered item. Only [`Flow::ask_batch`] builds one, and
/// only after a real accept that picked at least one item.
pub struct Chosen {
    picks: Vec<Offered>,
    offered: usize,
}

impl<'g> Flow<'g, Picked> {
    /// Starts one batch call.
    pub fn batch(guard: &'g Guard, call: GuardCall, spec: &'static ToolSpec) -> Self {
        Self::start(guard, call, spec, "batch")
    }

    /// Step 4: no items is a natural "nothing matched", more than `max_items` a natural
    /// "narrow the rule"; neither asks anyone. An answering MRTR round is judged against the
    /// offer it sealed, not against what the preview finds now.
    pub fn begin_batch(
        &self,
        _incoming: Incoming,
        preview: Result<Batch, ToolError>,
        max_items: usize,
    ) -> Step<ShownBatch> {
        let batch = preview.map_err(|error| self.refuse(Outcome::PreviewFailed, error))?;
        if let Some(key) = batch.duplicate_key() {
            tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, key, "a batch preview offered the same key twice");
            return Err(self.refuse(
                Outcome::Misconfigured,
                ToolError::new(
                    Code::InvalidState,
                    format!(
                        "Nothing was changed: {} offered one item twice, so the user's picks could not be told apart (trace_id {}). Tell the operator.",
                        self.spec.name, self.trace_id
                    ),
                ),
            ));
        }
        let count = batch.items().len();
        self.seen().effect = Some((
            crate::preview::Target::new(batch.rule()),
            format!("{count} {} matched", plural(count, "item", "items")),
        ));
        if self.opened.is_none() {
            if count == 0 {
                return Err(self.natural(
                    Outcome::NothingMatched,
                    format!("Nothing matches {}; nothing was changed.", batch.rule()),
                ));
            }
            if count > max_items {
                return Err(self.natural(
                    Outcome::TooMany,
                    format!(
                        "{count} items match {}, more than the {max_items} one question may offer; nothing was changed and the user was not asked. Narrow the rule so that at most {max_items} items match, then call the tool again.",
                        batch.rule()
                    ),
                ));
            }
        }
        Ok(ShownBatch {
            rule: batch.rule().to_owned(),
            effect: batch.effect().to_owned(),
            offer: batch.items().iter().map(|i| i.offered()).collect(),
        })
    }

    /// Steps 5–7: one multi-select question, decline and cancel as outcomes, and the picks
    /// revalidated against the offer: only offered keys, each once; none picked is a
    /// natural "nothing was changed".
    pub async fn ask_batch(&self, shown: ShownBatch) -> Step<Chosen> {
        let (answer, offer) = if self.is_mrtr() {
            let ttl = self.guard.timeout(self.spec.timeout);
            let Some(sealed) = self.verified_state().await? else {
                if !self.client_can_confirm() {
                    return Err(self.unsupported());
                }
                // The offer is sealed item by item, each with its own fingerprint.
                let state = self
                    .seal_state(String::new(), ttl, None, Some(shown.offer.clone()))
                    .await?;
                let request =
                    InputRequest::Elicitation(ElicitRequest::new(self.batch_question(&shown)));
                self.audit(Outcome::Asked, "mrtr");
                return Err(self.input_required(request, state));
            };
            self.redeem_state(sealed, ttl).await?;
            // The picks are judged against the sealed offer, not what the preview finds now.
            // A state without an offer offers nothing: any pick is refused.
            (
                self.mrtr_answer()?,
                sealed.offered.clone().unwrap_or_default(),
            )
        } else {
            (
                self.ask_push(self.batch_question(&shown)).await?,
                shown.offer,
            )
        };
        let content = self.accepted(answer)?;
        let picks = picks(content.as_ref(), &offer).map_err(|reason| self.invalid(reason))?;
        self.seen().answer = Some(
            [(
                PICKS.to_owned(),
                picks.iter().map(|p| p.key.clone()).collect(),
            )]
            .into_iter()
            .collect(),
        );
        if picks.is_empty() {
            let text = match offer.len() {
                1 => "The user did not pick the one offered item; nothing was changed.".to_owned(),
                n => format!("The user picked none of the {n} offered items; nothing was changed."),
            };
            return Err(self.natural(Outcome::NothingPicked, text));
        }
        Ok(Chosen {
            picks,
            offered: offer.len(),
        })
    }

    /// Step 8, item by item: a picked item the preview no longer finds as it was shown is
    /// skipped, the others go into the proof, once the log holds the confirmation.
    pub async fn recheck_batch(
        &self,
        chosen: Chosen,
        again: Result<Batch, ToolError>,
    ) -> Step<Picked> {
        if self.call.request.ct.is_cancelled() {
            return Err(self.cancelled_by_client());
        }
        let now = again.map_err(|error| self.refuse(Outcome::PreviewFailed, error))?;
        let by_key: HashMap<&str, _> = now.items().iter().map(|i| (i.key(), i)).collect();
        let (mut ready, mut skipped) = (Vec::new(), Vec::new());
        for pick in &chosen.picks {
            match by_key.get(pick.key.as_str()) {
                Some(item) if item.fingerprint() == pick.fingerprint => ready.push((*item).clone()),
                Some(_) => skipped.push(ItemReport::skipped(
                    pick,
                    "changed after the user picked it, so it was left alone. Call the tool again to show the user the item as it is now.".to_owned(),
                )),
                None => skipped.push(ItemReport::skipped(
                    pick,
                    format!(
                        "no longer among the items {} selects, so it was left alone.",
                        now.rule()
                    ),
                )),
            }
        }
        self.commit_accepted(None).await?;
        Ok(Picked::new(
            ready,
            skipped,
            chosen.offered,
            self.trace_id.clone(),
        ))
    }

    /// Step 10: one audit record per picked item, then the call's record with the counts;
    /// the model gets the report as text and as `structuredContent`.
    pub fn finish_batch(&self, report: Report) -> Result<CallToolResponse, rmcp::ErrorData> {
        if !report.is_of_call(self.trace_id.as_str()) {
            return Ok(self.foreign_report());
        }
        for item in report.items() {
            let event = crate::audit::Event::new(
                self.spec.name,
                Outcome::Item(item.outcome()),
                self.trace_id.as_str(),
            )
            .field("key", item.key())
            .field("detail", item.detail());
            self.guard.record(event);
        }
        self.seen().counts = Some(report.counts());
        let mut result = CallToolResult::success(vec![ContentBlock::text(report.text())]);
        result.structured_content = Some(report.structured());
        let outcome = if report.all_failed() {
            result.is_error = Some(true);
            Outcome::HandlerError
        } else {
            Outcome::Executed
        };
        let digest = serde_json::to_value(&result).ok();
        self.record(outcome, "", digest.as_ref());
        Ok(self.tag(result, outcome).into())
    }

    /// The handler returned a report another call built (kept from an earlier call): its
    /// items are not what this call acted on, so none of them is recorded as this call's.
    fn foreign_report(&self) -> CallToolResponse {
        tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, "a batch handler returned a report built by another call");
        let result = CallToolResult::error(vec![ContentBlock::text(format!(
            "{} returned a report of another call, so what this call did is unknown (trace_id {}). Tell the operator: a batch handler must return the report its own `picked.act(...)` built.",
            self.spec.name, self.trace_id
        ))]);
        let digest = serde_json::to_value(&result).ok();
        self.record(Outcome::HandlerError, "", digest.as_ref());
        self.tag(result, Outcome::HandlerError).into()
    }

    fn batch_question(&self, shown: &ShownBatch) -> ElicitRequestParams {
        let count = shown.offer.len();
        let mut message = String::new();
        if let Some(header) = self.spec.message {
            message.push_str(header);
            message.push_str("\n\n");
        }
        message.push_str(&format!(
            "{count} {} {} {}. {} {}\n\nPick the items to act on; the items you do not pick are not touched.",
            plural(count, "item", "items"),
            plural(count, "matches", "match"),
            shown.rule,
            shown.effect,
            Terms::Final.sentence()
        ));
        let choices = shown
            .offer
            .iter()
            .map(|o| ConstTitle::new(o.key.clone(), o.title.clone()))
            .collect();
        let field = TitledMultiSelectEnumSchema::new(TitledItems::new(choices))
            .with_title("Items")
            .with_description(format!(
                "Pick any of the {count} {}.",
                plural(count, "item", "items")
            ));
        let properties = BTreeMap::from([(
            PICKS.to_owned(),
            PrimitiveSchemaDefinition::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Titled(
                field,
            ))),
        )]);
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: ElicitationSchema::new(properties),
        }
    }
}

/// The picked items, in the order they were offered, or why the answer is refused.
fn picks(content: Option<&Value>, offer: &[Offered]) -> Result<Vec<Offered>, String> {
    let object = match content {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(object)) => object,
        Some(_) => return Err("the answer is not a form object".to_owned()),
    };
    if let Some(unknown) = object.keys().find(|k| k.as_str() != PICKS) {
        return Err(format!(
            "the answer has a field `{unknown}` the question did not ask for"
        ));
    }
    let named = match object.get(PICKS) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(named)) => named,
        Some(_) => return Err(format!("`{PICKS}` must be a list of the offered items")),
    };
    let offered: HashSet<&str> = offer.iter().map(|o| o.key.as_str()).collect();
    let mut picked = HashSet::new();
    for value in named {
        let Some(key) = value.as_str() else {
            return Err(format!(
                "`{PICKS}` holds {value}, which is not one of the offered items"
            ));
        };
        if !offered.contains(key) {
            return Err(format!("`{PICKS}` names {key:?}, which was not offered"));
        }
        if !picked.insert(key) {
            return Err(format!("`{PICKS}` names {key:?} twice"));
        }
    }
    Ok(offer
        .iter()
        .filter(|o| picked.contains(o.key.as_str()))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::batch::Item;

    fn offer() -> Vec<Offered> {
        ["a.log", "b.log", "c.log"]
            .iter()
            .map(|k| Item::new(*k, k.to_uppercase()).offered())
            .collect()
    }

    fn keys(picked: &[Offered]) -> Vec<&str> {
        picked.iter().map(|p| p.key.as_str()).collect()
    }

    #[test]
    fn picks_come_back_in_offer_order() {
        let got = picks(Some(&json!({"items": ["c.log", "a.log"]})), &offer()).unwrap();
        assert_eq!(keys(&got), ["a.log", "c.log"]);
    }

    #[test]
    fn no_picks_in_any_spelling_is_an_empty_selection() {
        for content in [
            None,
            Some(json!(null)),
            Some(json!({})),
            Some(json!({"items": null})),
            Some(json!({"items": []})),
        ] {
            assert_eq!(
                picks(content.as_ref(), &offer()).unwrap(),
                [],
                "{content:?}"
            );
        }
    }

    #[test]
    fn anything_but_offered_keys_once_each_is_refused() {
        for (content, reason) in [
            (
                json!({"items": ["d.log"]}),
                "`items` names \"d.log\", which was not offered",
            ),
            (
                json!({"items": ["A.LOG"]}),
                "`items` names \"A.LOG\", which was not offered",
            ),
            (
                json!({"items": ["a.log", "a.log"]}),
                "`items` names \"a.log\" twice",
            ),
            (
                json!({"items": [1]}),
                "`items` holds 1, which is not one of the offered items",
            ),
            (
                json!({"items": "a.log"}),
                "`items` must be a list of the offered items",
            ),
            (
                json!({"items": [], "confirm": true}),
                "the answer has a field `confirm` the question did not ask for",
            ),
            (json!(["a.log"]), "the answer is not a form object"),
        ] {
            assert_eq!(
                picks(Some(&content), &offer()).unwrap_err(),
                reason,
                "{content}"
            );
        }
    }
}
