//! Undo windows: an effect that can be reversed for a while, by its owner, exactly once.
//!
//! A tool declares its undo with `#[destructive(undo = Self::undo_x, undo_within = "10m",
//! purge = Self::purge_x)]` and returns [`Reversible`]; after its effect ran, guard opens a
//! window in the operation store: a server-generated `operation_id`, the caller's tenant
//! and user (canonical), the tool, the target, what undoing needs (canonical JSON, from the
//! effect itself) and a deadline on the database's clock. Until the deadline the owner may
//! undo it once; after it, guard runs the author's purge once, and the effect is final.
//! Only guard's pipeline opens, undoes and purges windows, and the database's clock, never
//! a caller's time, says whether a window has expired.
//!
//! What the store enforces (the table `guard_undo` and its triggers): a window opens
//! `OPEN`, closes once (`UNDONE` with its result, `LOST` with the reason its undo can never
//! succeed, or `PURGED`), and never changes whose it is, what it undoes or until when.
//! What the code enforces: an undo and a purge of one window take its row lock (SQLite's
//! one writer, PostgreSQL's `FOR UPDATE`) and re-read its status under it, so one of them
//! wins and the other reports which; a second undo answers with the first one's result;
//! anyone else's window is not found, exactly like an id that never existed.
//!
//! What it does not do: guard restores what the author's undo restores. Whether the target
//! is still as the effect left it (nothing replaced or consumed it since) is the author's
//! undo to check: its `STATE_CHANGED` refusal leaves the window open and nothing restored
//! (the human can clear the way and undo again), and its `UNDO_EXPIRED` refusal says the
//! undo can never succeed (what it would restore changed or went away), so the window ends
//! `LOST` with that reason, which every later undo answers, and no purge runs for it. Consumers outside the store (a downstream job that already read a deleted row)
//! are beyond guard's reach.

mod answer;
mod purge;
mod redeem;
mod reversible;
pub(crate) mod table;

use std::{sync::Arc, time::Duration};

use serde_json::Value;

pub use crate::preview::Terms;
pub use purge::Purger;
pub use redeem::Undo;
pub use reversible::{IntoReversible, Ran, Reversible};

use crate::{
    audit::{AuditLog, Event},
    canonical::canonical_payload,
    error::ToolError,
    outcome::Outcome,
    person::Person,
    store::ledger::Owner,
    store::{OperationStore, Row, Statement, StoreError, Tx},
};

/// The name of the tool that undoes a window, one per server.
pub const TOOL: &str = "undo";

/// One undo window as the author's undo and purge see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// The server-generated id the model undoes it by.
    pub operation_id: String,
    /// The tool whose effect it undoes.
    pub tool: String,
    /// The effect's target, as its preview named it.
    pub target: String,
    /// What undoing needs, as the effect returned it.
    pub data: Value,
    /// When the effect ran (ms since the Unix epoch).
    pub created_at: i64,
    /// The deadline: from it on the window is closed and the purge is due.
    pub expires_at: i64,
}

/// Where a window was opened: its id and deadline, for the model's result and the audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The id `undo` takes.
    pub operation_id: String,
    /// The deadline (ms since the Unix epoch).
    pub expires_at: i64,
}

/// The undo windows of one operation store, audited into its log. Only guard's pipeline
/// opens, undoes and purges them.
#[derive(Clone)]
pub(crate) struct UndoWindows {
    store: Arc<dyn OperationStore>,
    audit: AuditLog,
}

impl std::fmt::Debug for UndoWindows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UndoWindows").finish_non_exhaustive()
    }
}

/// The columns every read of a window takes.
const COLUMNS: &str = "operation_id, tenant, user_id, tool, target, data, status, created_at, expires_at, closed_at, result";

impl UndoWindows {
    /// The windows in `store`, each step recorded in `audit` (the store's own log, so a
    /// record commits with the change it describes).
    pub(crate) fn new(store: Arc<dyn OperationStore>, audit: AuditLog) -> Self {
        Self { store, audit }
    }

    /// Opens a window for `owner` on the effect `tool` just ran on `target`, keeping `data`
    /// (what undoing needs) until `within` from now on the database's clock. The window and
    /// its `undo_opened` record commit together. Only the flow of a reversible tool calls
    /// this, after its effect ran.
    pub(crate) async fn open(
        &self,
        owner: &Person,
        tool: &str,
        target: &str,
        data: &Value,
        within: Duration,
        trace_id: &str,
    ) -> Result<Opened, StoreError> {
        let (data, digest) = canonical_payload(data)
            .map_err(|e| StoreError::Other(format!("the undo data has no canonical JSON: {e}")))?;
        let within = i64::try_from(within.as_millis()).unwrap_or(i64::MAX);
        let mut tx = self.store.begin().await?;
        let now = crate::store::ledger::clock::now(&mut tx).await?;
        let opened = Opened {
            operation_id: uuid::Uuid::new_v4().to_string(),
            expires_at: now.saturating_add(within.max(1)),
        };
        let insert = Statement::execute(
            "INSERT INTO guard_undo (operation_id, tenant, user_id, tool, target, data,
                 data_sha256, status, created_at, expires_at, trace_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'OPEN', $8, $9, $10)",
            vec![
                opened.operation_id.as_str().into(),
                owner.tenant().into(),
                owner.user().into(),
                tool.into(),
                target.into(),
                data.into(),
                digest.as_str().into(),
                now.into(),
                opened.expires_at.into(),
                trace_id.into(),
            ],
        );
        let record = Event::new(tool, Outcome::UndoOpened, trace_id)
            .identity(owner.tenant(), owner.user())
            .field("operation_id", opened.operation_id.as_str())
            .field("target", target)
            .field("undo_until", crate::ops::rfc3339(opened.expires_at))
            .field("data_sha256", digest);
        self.commit(tx, vec![insert], &record).await?;
        Ok(opened)
    }

    /// Runs `last`, writes `record` and commits, all in `tx` (in one trip where the store
    /// allows, as every audited commit).
    async fn commit(&self, tx: Tx, last: Vec<Statement>, record: &Event) -> Result<(), StoreError> {
        record.mirror();
        self.audit.commit_with(tx, last, record, None).await
    }
}

/// A window's status, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Open,
    Undone,
    Lost,
    Purged,
}

/// A row of `guard_undo`, with what only guard reads: its owner and how it closed.
#[derive(Debug)]
struct Stored {
    window: Window,
    owner: Owner,
    status: Status,
    closed_at: Option<i64>,
    result: Option<String>,
}

impl Stored {
    fn from_row(row: &Row) -> Result<Self, StoreError> {
        let data = row.text("data")?;
        let status = match row.text("status")? {
            "OPEN" => Status::Open,
            "UNDONE" => Status::Undone,
            "LOST" => Status::Lost,
            "PURGED" => Status::Purged,
            other => {
                return Err(StoreError::Other(format!(
                    "guard_undo holds an unknown status {other:?}"
                )));
            }
        };
        Ok(Self {
            window: Window {
                operation_id: row.text("operation_id")?.to_owned(),
                tool: row.text("tool")?.to_owned(),
                target: row.text("target")?.to_owned(),
                data: serde_json::from_str(data).map_err(|e| {
                    StoreError::Other(format!("guard_undo holds undo data that is not JSON: {e}"))
                })?,
                created_at: row.int("created_at")?,
                expires_at: row.int("expires_at")?,
            },
            owner: Owner::from_row(row)?,
            status,
            closed_at: row.opt_int("closed_at")?,
            result: row.opt_text("result")?.map(str::to_owned),
        })
    }

    fn owned_by(&self, owner: &Person) -> bool {
        self.owner.is(owner)
    }
}

/// The author's answer to an undo: the restored target's description, or why nothing was
/// restored (a `STATE_CHANGED` refusal when the target is no longer as the effect left it).
pub type Restored = Result<Value, ToolError>;
