//! The log's head: where the next entry goes, read under the log's lock, and the
//! statements that write an entry there. Appends, the sequencer and the legacy migration
//! all place entries through it.

use serde_json::Value;

use super::{Event, merkle::Hash};
use crate::{
    canonical::hex,
    store::{
        Dialect, Row, SqlValue, Statement, StoreError, Tx,
        lock::{self, Lock},
        now_ms,
    },
};
use rmcp_guard_log::{entry_hash, parse_hex};

/// Where the next entry goes, read under the log's lock (see [`lock_head`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Head {
    pub(super) seq: i64,
    pub(super) prev: Hash,
}

impl Head {
    /// The place after `last`, the log's last row as [`head_statement`] reads it.
    pub(super) fn after(last: Option<&Row>) -> Result<Self, StoreError> {
        let (seq, prev) = head_of(last)?;
        Ok(Self { seq, prev })
    }

    /// The statement that stores `event` here; the head moves past it.
    pub(super) fn next(&mut self, event: &Event) -> Statement {
        let (statement, leaf) = entry_insert(self.seq, &self.prev, event);
        self.seq += 1;
        self.prev = leaf;
        statement
    }
}

/// The statement that reads the log's last entry, for [`Head::after`].
pub(super) fn head_statement() -> Statement {
    Statement::query(LAST, Vec::new())
}

/// The statements that take the log's lock and read its head, sent after the caller's own.
pub(super) fn lock_and_head(dialect: Dialect) -> Vec<Statement> {
    let mut statements: Vec<Statement> = lock::statement(dialect, Lock::AuditAppend)
        .into_iter()
        .collect();
    statements.push(head_statement());
    statements
}

/// Takes the log's lock and reads its head, in one trip to the store. The lock is held
/// until `tx` ends, so the head stays true for [`commit_at`].
pub(super) async fn lock_head(tx: &mut Tx) -> Result<Head, StoreError> {
    let mut done = tx.pipeline(&lock_and_head(tx.dialect())).await?;
    Head::after(done.pop().and_then(|d| d.rows.into_iter().next()).as_ref())
}

/// Writes `event` at `head` and commits `tx`, in one trip to the store.
pub(super) async fn commit_at(tx: Tx, mut head: Head, event: &Event) -> Result<u64, StoreError> {
    let seq = head.seq as u64;
    tx.commit_after(vec![head.next(event)]).await?;
    Ok(seq)
}

/// The last entry's place and hash.
pub(super) const LAST: &str = "SELECT seq, hash FROM guard_audit_log ORDER BY seq DESC LIMIT 1";

/// The place after `last` (the log's last row, if any) and the hash it follows.
fn head_of(last: Option<&Row>) -> Result<(i64, Hash), StoreError> {
    match last {
        None => Ok((0, [0u8; 32])),
        Some(row) => {
            let hash = parse_hex(row.text("hash")?.as_bytes()).ok_or_else(|| {
                StoreError::Column(
                    "the last audit record's hash is not a SHA-256; run guard-audit verify to find what changed".into(),
                )
            })?;
            Ok((row.int("seq")? + 1, hash))
        }
    }
}

/// The statement that stores `event` as entry `seq` after `prev`, and the entry's leaf hash.
fn entry_insert(seq: i64, prev: &Hash, event: &Event) -> (Statement, Hash) {
    let at = event.time().unwrap_or_else(now_ms);
    let entry = event.entry(seq as u64, prev, at);
    let leaf = entry_hash(entry.as_bytes());
    let statement = Statement::execute(
        "INSERT INTO guard_audit_log
            (seq, hash, entry, trace_id, tool, outcome, tenant, user_id, operation_id, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        [seq.into(), hex(&leaf).into(), entry.into()]
            .into_iter()
            .chain(indexed(event, at))
            .collect(),
    );
    (statement, leaf)
}

/// The columns an entry is found by: trace id, tool, outcome, tenant, user, operation id
/// and time, as [`verify_rows`](rmcp_guard_log::verify_rows) checks them against the entry.
pub(super) fn indexed(event: &Event, at: i64) -> [SqlValue; 7] {
    let text = |name| event.get(name).and_then(Value::as_str).map(str::to_owned);
    [
        event.trace_id().into(),
        event.tool().into(),
        event.outcome().into(),
        text("tenant").into(),
        text("user").into(),
        text("operation_id").into(),
        at.into(),
    ]
}
