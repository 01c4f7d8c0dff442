//! Batch operations: the human picks, item by item, which of the matched items the effect
//! touches.
//!
//! A `#[destructive(batch, preview = ...)]` tool's preview returns a [`Batch`]: the rule that
//! selected the items (a glob, a query) and each item with a stable key, a title the human
//! reads and hidden state that must not change before the effect (a file's identity). guard
//! asks with a multi-select of the items (at most `max_items` of them), checks that the answer
//! names only offered items, re-runs the preview and compares every picked item, and hands the
//! handler a [`Picked`] proof holding only the picked items that are still as shown. The
//! handler acts on them with [`Picked::act`], which builds the per-item [`Report`]: done,
//! skipped because it changed, or failed.

use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::{Code, ToolError};

/// The most items one question may offer when the tool does not say (`max_items = N`).
pub const DEFAULT_MAX_ITEMS: usize = 20;
/// The most items any batch question may offer: a longer list is not read item by item.
pub const MAX_ITEMS_LIMIT: usize = 100;

/// What a batch tool's preview found: the rule and the items it selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    rule: String,
    effect: String,
    items: Vec<Item>,
}

/// One item a batch may act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    key: String,
    title: String,
    state: String,
}

impl Batch {
    /// The items `rule` selected (say it as the human would read it, e.g. ``files matching
    /// `logs/*.log` ``); `effect` says what happens to each picked item
    /// ("Each picked file is deleted; this cannot be undone.").
    pub fn new(rule: impl Into<String>, effect: impl Into<String>) -> Self {
        Self {
            rule: rule.into(),
            effect: effect.into(),
            items: Vec::new(),
        }
    }

    /// Adds an item.
    pub fn item(mut self, item: Item) -> Self {
        self.items.push(item);
        self
    }

    /// The rule, as shown.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// The items, in the order they are offered.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    pub(crate) fn effect(&self) -> &str {
        &self.effect
    }

    /// The first key that appears twice, if any: keys name the human's picks.
    pub(crate) fn duplicate_key(&self) -> Option<&str> {
        let mut seen = std::collections::HashSet::new();
        self.items
            .iter()
            .map(|i| i.key.as_str())
            .find(|k| !seen.insert(*k))
    }
}

impl Item {
    /// An item named `key` (unique within the batch, stable between the question and the
    /// effect) and shown as `title`.
    pub fn new(key: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            title: title.into(),
            state: String::new(),
        }
    }

    /// Adds state the human does not read but that must not change before the effect runs
    /// (a file's pin, a row version). A picked item whose state changed is skipped.
    pub fn with_state(self, state: impl Into<String>) -> Self {
        Self {
            state: state.into(),
            ..self
        }
    }

    /// The key the human's answer names.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// What the human was shown.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The hidden state, as the preview gave it: act on this (a file's pin), so what the
    /// human picked is what the effect touches.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// A digest of the title and the state: equal digests mean the item is as shown.
    pub(crate) fn fingerprint(&self) -> String {
        let mut hash = Sha256::new();
        for part in [&self.key, &self.title, &self.state] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        crate::canonical::hex(&hash.finalize())
    }

    pub(crate) fn offered(&self) -> Offered {
        Offered {
            key: self.key.clone(),
            title: self.title.clone(),
            fingerprint: self.fingerprint(),
        }
    }
}

/// An item as the question offered it. On 2026-07-28 the offer travels in the sealed
/// request state, so the answering round judges the answer against what was shown, not
/// against what the preview finds now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Offered {
    #[serde(rename = "k")]
    pub key: String,
    #[serde(rename = "t")]
    pub title: String,
    #[serde(rename = "f")]
    pub fingerprint: String,
}

/// The picked items, each re-checked to be as the human saw it. Only guard's flow builds
/// one, after the human picked them; a batch handler must take it, so its effect cannot run
/// on items nobody picked.
#[derive(Debug)]
pub struct Picked {
    items: Vec<Item>,
    skipped: Vec<ItemReport>,
    offered: usize,
    trace_id: String,
}

impl Picked {
    pub(crate) fn new(
        items: Vec<Item>,
        skipped: Vec<ItemReport>,
        offered: usize,
        trace_id: String,
    ) -> Self {
        Self {
            items,
            skipped,
            offered,
            trace_id,
        }
    }

    /// The picked items that are still as shown, in the order they were offered.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The id that ties this call's log and audit lines together.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// Runs `effect` on each picked item in turn and reports each one: `Ok(text)` is done,
    /// an `Err` with [`Code::StateChanged`] is skipped (the item changed since the human
    /// picked it; check the item's state again right before acting), any other `Err`
    /// failed. Items that changed before the handler ran are already reported as skipped.
    pub async fn act<Fut>(self, mut effect: impl FnMut(Item) -> Fut) -> Report
    where
        Fut: Future<Output = Result<String, ToolError>>,
    {
        let mut items = Vec::with_capacity(self.items.len() + self.skipped.len());
        for item in self.items {
            let (key, title) = (item.key.clone(), item.title.clone());
            let (outcome, detail) = match effect(item).await {
                Ok(text) => (ItemOutcome::Done, text),
                Err(e) if e.code() == Code::StateChanged => {
                    (ItemOutcome::Skipped, e.message().to_owned())
                }
                Err(e) => (ItemOutcome::Failed, e.to_string()),
            };
            items.push(ItemReport {
                key,
                title,
                outcome,
                detail,
            });
        }
        items.extend(self.skipped);
        Report {
            items,
            offered: self.offered,
            trace_id: self.trace_id,
        }
    }
}

/// What happened to each picked item. Only [`Picked::act`] builds one, and it belongs to
/// the call whose `Picked` built it: it cannot be cloned, and guard refuses a report of
/// another call, so the audit records the items this call acted on.
#[derive(Debug, PartialEq, Eq)]
pub struct Report {
    items: Vec<ItemReport>,
    offered: usize,
    /// The call whose `Picked` built this report.
    trace_id: String,
}

/// What happened to one picked item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemReport {
    key: String,
    title: String,
    outcome: ItemOutcome,
    detail: String,
}

/// The outcome of one picked item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemOutcome {
    /// The effect ran.
    Done,
    /// The item changed after the human picked it, so it was left alone.
    Skipped,
    /// The effect was tried and failed.
    Failed,
}

impl ItemOutcome {
    /// The outcome as the report and the audit log spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemOutcome::Done => "done",
            ItemOutcome::Skipped => "skipped",
            ItemOutcome::Failed => "failed",
        }
    }
}

impl ItemReport {
    pub(crate) fn skipped(offered: &Offered, detail: String) -> Self {
        Self {
            key: offered.key.clone(),
            title: offered.title.clone(),
            outcome: ItemOutcome::Skipped,
            detail,
        }
    }

    /// The item's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The item's title, as shown.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// Done, skipped or failed.
    pub fn outcome(&self) -> ItemOutcome {
        self.outcome
    }

    /// The effect's own text, or why the item was skipped or failed.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl Report {
    /// Each picked item's outcome.
    pub fn items(&self) -> &[ItemReport] {
        &self.items
    }

    /// Whether this report was built by the call with `trace_id`.
    pub(crate) fn is_of_call(&self, trace_id: &str) -> bool {
        self.trace_id == trace_id
    }

    fn count(&self, outcome: ItemOutcome) -> usize {
        self.items.iter().filter(|i| i.outcome == outcome).count()
    }

    /// Nothing was done and something failed: the call as a whole is an error.
    pub(crate) fn all_failed(&self) -> bool {
        self.count(ItemOutcome::Done) == 0 && self.count(ItemOutcome::Failed) > 0
    }

    /// The counts, as the audit record and `structuredContent` carry them.
    pub(crate) fn counts(&self) -> Value {
        json!({
            "offered": self.offered,
            "picked": self.items.len(),
            "done": self.count(ItemOutcome::Done),
            "skipped": self.count(ItemOutcome::Skipped),
            "failed": self.count(ItemOutcome::Failed),
        })
    }

    /// The structured result: the counts and one entry per picked item.
    pub(crate) fn structured(&self) -> Value {
        let mut value = self.counts();
        value["items"] = self
            .items
            .iter()
            .map(|i| {
                json!({"key": i.key, "title": i.title, "outcome": i.outcome.as_str(), "detail": i.detail})
            })
            .collect();
        value
    }

    /// The readable result: a summary line, then one line per picked item.
    pub(crate) fn text(&self) -> String {
        let picked = self.items.len();
        let untouched = self.offered.saturating_sub(picked);
        let mut text = format!(
            "{} of {picked} picked {} done, {} skipped because {} changed since the user picked {}, {} failed. {untouched} offered {} not picked and {} not touched.",
            self.count(ItemOutcome::Done),
            plural(picked, "item", "items"),
            self.count(ItemOutcome::Skipped),
            plural(self.count(ItemOutcome::Skipped), "it", "they"),
            plural(self.count(ItemOutcome::Skipped), "it", "them"),
            self.count(ItemOutcome::Failed),
            plural(untouched, "item was", "items were"),
            plural(untouched, "was", "were"),
        );
        for item in &self.items {
            text.push_str(&format!(
                "\n- {}: {} — {}",
                item.outcome.as_str(),
                item.title,
                item.detail
            ));
        }
        text
    }
}

pub(crate) fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picked(items: &[(&str, &str)], skipped: &[&str]) -> Picked {
        let items = items
            .iter()
            .map(|(k, s)| Item::new(*k, format!("title {k}")).with_state(*s))
            .collect();
        let skipped = skipped
            .iter()
            .map(|k| {
                ItemReport::skipped(
                    &Item::new(*k, format!("title {k}")).offered(),
                    "changed".into(),
                )
            })
            .collect();
        Picked::new(items, skipped, 5, "t".into())
    }

    #[tokio::test]
    async fn act_reports_done_skipped_and_failed_per_item() {
        let report = picked(&[("a", "ok"), ("b", "moved"), ("c", "broken")], &["d"])
            .act(|item| async move {
                match item.state() {
                    "ok" => Ok(format!("did {}", item.key())),
                    "moved" => Err(ToolError::new(Code::StateChanged, "b moved")),
                    _ => Err(ToolError::invalid_input("c is broken")),
                }
            })
            .await;
        let got: Vec<_> = report
            .items()
            .iter()
            .map(|i| (i.key(), i.outcome(), i.detail()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", ItemOutcome::Done, "did a"),
                ("b", ItemOutcome::Skipped, "b moved"),
                ("c", ItemOutcome::Failed, "[INVALID_INPUT] c is broken"),
                ("d", ItemOutcome::Skipped, "changed"),
            ]
        );
        assert_eq!(
            report.counts(),
            json!({"offered": 5, "picked": 4, "done": 1, "skipped": 2, "failed": 1})
        );
        assert!(!report.all_failed());
        assert!(report.text().starts_with("1 of 4 picked items done, 2 skipped because they changed since the user picked them, 1 failed. 1 offered item was not picked and was not touched."), "{}", report.text());
        assert!(report.text().contains("\n- skipped: title b — b moved"));
    }

    #[tokio::test]
    async fn act_never_runs_the_effect_on_items_skipped_before_it() {
        let mut seen = Vec::new();
        let report = picked(&[("a", "")], &["b"])
            .act(|item| {
                seen.push(item.key().to_owned());
                async { Ok(String::new()) }
            })
            .await;
        assert_eq!(seen, ["a"]);
        assert_eq!(report.items().len(), 2);
    }

    #[tokio::test]
    async fn a_report_with_only_failures_is_an_error() {
        let report = picked(&[("a", "")], &[])
            .act(|_| async { Err(ToolError::invalid_input("no")) })
            .await;
        assert!(report.all_failed());
    }

    #[test]
    fn an_item_fingerprint_covers_its_key_title_and_state() {
        let base = Item::new("a", "A").with_state("s1");
        assert_eq!(base.fingerprint(), base.clone().fingerprint());
        for other in [
            Item::new("b", "A").with_state("s1"),
            Item::new("a", "B").with_state("s1"),
            Item::new("a", "A").with_state("s2"),
            // Lengths are hashed, so moving a boundary is a different item.
            Item::new("aA", "").with_state("s1"),
        ] {
            assert_ne!(base.fingerprint(), other.fingerprint(), "{other:?}");
        }
    }

    #[test]
    fn duplicate_keys_are_found() {
        let batch = Batch::new("r", "e")
            .item(Item::new("a", "1"))
            .item(Item::new("b", "2"))
            .item(Item::new("a", "3"));
        assert_eq!(batch.duplicate_key(), Some("a"));
        assert_eq!(Batch::new("r", "e").duplicate_key(), None);
    }
}
