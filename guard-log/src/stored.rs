//! The log as a store holds it: one row per entry, its hash and the columns it is found by
//! beside the canonical bytes, and the entries committed but not yet placed. The server
//! writes these rows and `guard-audit` reads them; both verify them here, so a column that
//! says something its entry does not is found the same way by both.

use serde_json::Value;

use crate::{
    checkpoint::Checkpoint,
    event::{parse_hex, place},
    verify::{Fault, FaultKind, Item, Verified, verify_against},
};

/// One stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its place in the log.
    pub seq: u64,
    /// Its leaf hash, as stored (lowercase hex).
    pub hash: String,
    /// Its canonical bytes, as stored.
    pub entry: String,
}

impl Record {
    /// The exported JSON line: the entry with its hash in front.
    pub fn line(&self) -> String {
        format!(
            "{{\"hash\":\"{}\",{}",
            self.hash,
            self.entry.get(1..).unwrap_or_default()
        )
    }

    /// The entry as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.entry).ok()
    }
}

/// The export of `records` as JSON Lines, each ending in a newline.
pub fn export(records: &[Record]) -> String {
    let mut out = String::new();
    for record in records {
        out.push_str(&record.line());
        out.push('\n');
    }
    out
}

/// An entry committed with its call but not yet given its place in the log: it will be,
/// by the next batch of a sequencer (within a second of its commit while any of the
/// store's server processes runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The call's trace id.
    pub trace_id: String,
    /// The tool.
    pub tool: String,
    /// The outcome code.
    pub outcome: String,
    /// When it happened (ms since the epoch).
    pub at: i64,
}

/// A row of the log's table, every column as stored, for [`verify_rows`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `seq`.
    pub seq: i64,
    /// `hash` (lowercase hex).
    pub hash: String,
    /// `entry`, the canonical bytes.
    pub entry: String,
    /// `trace_id`.
    pub trace_id: String,
    /// `tool`.
    pub tool: String,
    /// `outcome`.
    pub outcome: String,
    /// `tenant`.
    pub tenant: Option<String>,
    /// `user_id`.
    pub user_id: Option<String>,
    /// `operation_id`.
    pub operation_id: Option<String>,
    /// `at` (ms since the epoch).
    pub at: i64,
}

/// Verifies the stored log, its `rows` in sequence order (against `checkpoint` when given,
/// with `older` checkpoints of the log to name a rewrite from the first record none of them
/// vouches for): each row's indexed columns must agree with its entry, and the entries must
/// form one chain with the checkpoint's root. The first bad record is named, whether its
/// fault is in the chain or in an indexed column.
pub fn verify_rows(
    rows: &[Row],
    checkpoint: Option<&Checkpoint>,
    older: &[Checkpoint],
) -> Result<Verified, Fault> {
    let items: Vec<Item<'_>> = rows
        .iter()
        .map(|row| Item {
            hash: parse_hex(row.hash.as_bytes()),
            entry: row.entry.as_bytes(),
        })
        .collect();
    let column = rows.iter().enumerate().find_map(|(position, row)| {
        disagreeing_column(row).map(|name| Fault {
            kind: FaultKind::Modified,
            position,
            seq: position as u64,
            detail: format!("its column `{name}` disagrees with its hashed entry"),
        })
    });
    // The earlier of the two faults; at one record, the chain's (its bytes) comes first.
    match (verify_against(&items, checkpoint, older), column) {
        (Ok(verified), None) => Ok(verified),
        (Err(chain), Some(column)) if column.position < chain.position => Err(column),
        (Err(fault), _) | (Ok(_), Some(fault)) => Err(fault),
    }
}

/// The first indexed column of `row` that says something its entry does not.
fn disagreeing_column(row: &Row) -> Option<&'static str> {
    let Some(entry) = serde_json::from_str::<Value>(&row.entry).ok() else {
        return Some("entry");
    };
    let text = |name: &str| entry.get(name).and_then(Value::as_str);
    let seq = place(row.entry.as_bytes()).map(|p| p.seq as i64);
    if Some(row.seq) != seq {
        Some("seq")
    } else if Some(row.trace_id.as_str()) != text("trace_id") {
        Some("trace_id")
    } else if Some(row.tool.as_str()) != text("tool") {
        Some("tool")
    } else if Some(row.outcome.as_str()) != text("outcome") {
        Some("outcome")
    } else if row.tenant.as_deref() != text("tenant") {
        Some("tenant")
    } else if row.user_id.as_deref() != text("user") {
        Some("user_id")
    } else if row.operation_id.as_deref() != text("operation_id") {
        Some("operation_id")
    } else if Some(row.at) != entry.get("at").and_then(Value::as_i64) {
        Some("at")
    } else {
        None
    }
}
