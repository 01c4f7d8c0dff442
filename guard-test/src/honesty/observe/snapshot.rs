//! What observers read: a sorted map of key → description, and the differences between two
//! readings that the judging reads.

use std::{collections::BTreeMap, fmt};

/// What one observer (or several, merged) saw: key → description. Two snapshots are equal
/// exactly when every key and every description is equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot(pub BTreeMap<String, String>);

/// One difference between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What changed.
    pub key: String,
    /// `None`: the key did not exist before.
    pub before: Option<String>,
    /// `None`: the key is gone.
    pub after: Option<String>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.before, &self.after) {
            (None, Some(after)) => write!(f, "{}: added ({after})", self.key),
            (Some(before), None) => write!(f, "{}: removed (was {before})", self.key),
            (Some(before), Some(after)) => write!(f, "{}: {before} → {after}", self.key),
            (None, None) => write!(f, "{}: unchanged", self.key),
        }
    }
}

impl Snapshot {
    /// Records `key` as `value`.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }

    /// Adds every entry of `other` under `prefix` (`"{prefix} {key}"`).
    pub fn merge(&mut self, prefix: &str, other: Snapshot) {
        for (key, value) in other.0 {
            self.0.insert(format!("{prefix} {key}"), value);
        }
    }

    /// Every key whose description differs between `self` (before) and `after`.
    pub fn diff(&self, after: &Snapshot) -> Vec<Change> {
        let mut changes = Vec::new();
        for (key, before) in &self.0 {
            match after.0.get(key) {
                None => changes.push(Change {
                    key: key.clone(),
                    before: Some(before.clone()),
                    after: None,
                }),
                Some(now) if now != before => changes.push(Change {
                    key: key.clone(),
                    before: Some(before.clone()),
                    after: Some(now.clone()),
                }),
                Some(_) => {}
            }
        }
        for (key, now) in &after.0 {
            if !self.0.contains_key(key) {
                changes.push(Change {
                    key: key.clone(),
                    before: None,
                    after: Some(now.clone()),
                });
            }
        }
        changes.sort_by(|a, b| a.key.cmp(&b.key));
        changes
    }

    /// The differences as one line each; empty when nothing changed.
    pub fn describe_diff(&self, after: &Snapshot) -> Vec<String> {
        self.diff(after).iter().map(ToString::to_string).collect()
    }
}
