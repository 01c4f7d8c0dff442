//! Deferred commits: a confirmed effect that waits, and can be withdrawn until it runs.
//!
//! A tool declares `#[destructive(..., defer = "2m")]`. After the human accepts (and the
//! re-check passes), guard does not run the handler: it stores the confirmed call in the
//! operation store (the tool, the canonical arguments, the accepted
//! form, the caller's canonical tenant and user, the fingerprint of the preview the human
//! saw, and the due time on the database's clock) and answers "scheduled for 14:24 UTC;
//! withdraw with withdraw(operation_id)". A runner ([`crate::run_deferred`]) later claims
//! each call the database's clock says is due (no caller passes a time, so nothing runs
//! before the time the human was told), re-runs the preview (a target no longer as the
//! human saw it is `STATE_CHANGED`, recorded, and nothing runs), then runs the handler with
//! a proof that only a claimed call can give, and records the outcome. Nothing here is
//! public that schedules, claims, runs or withdraws a call: only guard's pipeline does.
//!
//! What the store enforces (the table `guard_deferred` and its triggers): a call is stored
//! `SCHEDULED`, ends once (`WITHDRAWN`, `RAN`, `STATE_CHANGED` or `FAILED`), and never
//! changes whose it is, what it runs or when.
//! What the code enforces: a run and a withdrawal of one call take its row lock (SQLite's
//! one writer, PostgreSQL's `FOR UPDATE`; runners pass over a locked call with `SKIP
//! LOCKED`) and re-read its status under it, so one of them wins and the other's answer says
//! which; a second withdrawal answers like the first; anyone else's call is not found.
//!
//! What it does not do: the handler runs while its call is claimed, and the call closes in
//! the transaction that records the outcome. A process that stops between the handler's
//! effect and that commit leaves the call due, and the next runner claims it again: it
//! re-runs the preview first, so an effect that changed its target (a cancelled order, a
//! deleted file) is `STATE_CHANGED` and does not run twice, but an effect that leaves its
//! target as it found it must tolerate running again, as any effect outside the store must.
//! The stored call is trusted as the store is: whoever can write guard's tables can schedule.

mod answer;
mod run;
pub(crate) mod table;
mod withdraw;

use std::{sync::Arc, time::Duration};

use serde_json::Value;

pub(crate) use run::Claim;
pub use run::{Due, Ending, Runner};
pub use withdraw::Withdrawal;

use crate::{
    audit::{AuditLog, Event},
    canonical::canonical_payload,
    outcome::Outcome,
    person::Person,
    store::ledger::Owner,
    store::{Dialect, OperationStore, Row, Statement, StoreError, Tx},
};

/// The name of the tool that withdraws a deferred call, one per server.
pub const TOOL: &str = "withdraw";

/// A deferred call as its owner and the model see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferred {
    /// The server-generated id the model withdraws it by.
    pub operation_id: String,
    /// The tool whose effect waits.
    pub tool: String,
    /// The effect's target, as its preview named it.
    pub target: String,
    /// When it was scheduled (ms since the Unix epoch, the store's clock).
    pub created_at: i64,
    /// When it is due (ms since the Unix epoch, the store's clock).
    pub due_at: i64,
}

/// Where a call was scheduled: its id and due time, for the model's answer and the audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// The id `withdraw` takes.
    pub operation_id: String,
    /// When it runs (ms since the Unix epoch).
    pub due_at: i64,
}

/// What guard stores of a confirmed call it defers: built by the flow, from the call the
/// human accepted, never from outside the crate.
pub(crate) struct Confirmation<'a> {
    pub owner: &'a Person,
    pub tool: &'a str,
    pub target: &'a str,
    /// The call's arguments, as the model sent them.
    pub arguments: &'a Value,
    /// The accepted, revalidated form.
    pub form: &'a Value,
    /// The fingerprint of the effect the human was shown.
    pub fingerprint: &'a str,
}

/// The deferred calls of one operation store, audited into its log. Only guard's pipeline
/// schedules, runs and withdraws them.
#[derive(Clone)]
pub(crate) struct DeferredCalls {
    store: Arc<dyn OperationStore>,
    audit: AuditLog,
}

impl std::fmt::Debug for DeferredCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredCalls").finish_non_exhaustive()
    }
}

/// The columns every read of a call takes.
const COLUMNS: &str = "operation_id, tenant, user_id, tool, target, arguments, form, fingerprint, status, created_at, due_at, closed_at, result, trace_id";

impl DeferredCalls {
    /// The calls in `store`, each step recorded in `audit` (the store's own log, so a record
    /// commits with the change it describes).
    pub(crate) fn new(store: Arc<dyn OperationStore>, audit: AuditLog) -> Self {
        Self { store, audit }
    }

    /// Stores `call` to run `after` from now (the store's clock). The call and its
    /// `scheduled` record commit together.
    pub(crate) async fn schedule(
        &self,
        call: Confirmation<'_>,
        after: Duration,
        trace_id: &str,
    ) -> Result<Scheduled, StoreError> {
        let (arguments, arguments_sha256) = canonical_payload(call.arguments)
            .map_err(|e| StoreError::Other(format!("the arguments have no canonical JSON: {e}")))?;
        let (form, _) = canonical_payload(call.form)
            .map_err(|e| StoreError::Other(format!("the form has no canonical JSON: {e}")))?;
        let mut tx = self.store.begin().await?;
        let (scheduled, insert) = new_call(
            &mut tx,
            NewCall {
                operation_id: uuid::Uuid::new_v4().to_string(),
                owner: (call.owner.tenant(), call.owner.user()),
                tool: call.tool,
                target: call.target,
                arguments,
                arguments_sha256: &arguments_sha256,
                form,
                fingerprint: call.fingerprint,
                trace_id,
            },
            after,
        )
        .await?;
        let record = Event::new(call.tool, Outcome::Scheduled, trace_id)
            .identity(call.owner.tenant(), call.owner.user())
            .field("operation_id", scheduled.operation_id.as_str())
            .field("target", call.target)
            .field("due_at", crate::rfc3339::utc(scheduled.due_at))
            .field("args_sha256", arguments_sha256)
            .field("fingerprint", call.fingerprint);
        self.commit(tx, vec![insert], &record).await?;
        Ok(scheduled)
    }

    /// Runs `last`, writes `record` and commits, all in `tx`.
    async fn commit(&self, tx: Tx, last: Vec<Statement>, record: &Event) -> Result<(), StoreError> {
        record.mirror();
        self.audit.commit_with(tx, last, record, None).await
    }
}

/// A call to store: what a deferred tool or a deferred confirm keeps until it runs.
pub(crate) struct NewCall<'a> {
    pub operation_id: String,
    /// Tenant and user, canonical.
    pub owner: (&'a str, &'a str),
    pub tool: &'a str,
    pub target: &'a str,
    /// Canonical JSON.
    pub arguments: String,
    pub arguments_sha256: &'a str,
    /// Canonical JSON.
    pub form: String,
    pub fingerprint: &'a str,
    pub trace_id: &'a str,
}

/// The statement that stores `call` `SCHEDULED`, due `after` from now on the store's clock
/// (read in `tx`), and where it was scheduled; the caller commits it with its audit record.
pub(crate) async fn new_call(
    tx: &mut Tx,
    call: NewCall<'_>,
    after: Duration,
) -> Result<(Scheduled, Statement), StoreError> {
    let after = i64::try_from(after.as_millis()).unwrap_or(i64::MAX).max(1);
    let now = crate::store::ledger::clock::now(tx).await?;
    let scheduled = Scheduled {
        operation_id: call.operation_id,
        due_at: now.saturating_add(after),
    };
    let insert = Statement::execute(
        "INSERT INTO guard_deferred (operation_id, tenant, user_id, tool, target, arguments,
             arguments_sha256, form, fingerprint, status, created_at, due_at, trace_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'SCHEDULED', $10, $11, $12)",
        vec![
            scheduled.operation_id.as_str().into(),
            call.owner.0.into(),
            call.owner.1.into(),
            call.tool.into(),
            call.target.into(),
            call.arguments.into(),
            call.arguments_sha256.into(),
            call.form.into(),
            call.fingerprint.into(),
            now.into(),
            scheduled.due_at.into(),
            call.trace_id.into(),
        ],
    );
    Ok((scheduled, insert))
}

/// How a call ended, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Waiting for its due time.
    Scheduled,
    /// Its owner withdrew it: it never runs.
    Withdrawn,
    /// The handler ran (its result, error or not, is kept).
    Ran,
    /// At its due time the target was no longer as the human saw it: nothing ran.
    StateChanged,
    /// It could not be run (its arguments or form no longer read, or its preview failed):
    /// nothing ran.
    Failed,
}

impl Status {
    pub(crate) fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "SCHEDULED" => Status::Scheduled,
            "WITHDRAWN" => Status::Withdrawn,
            "RAN" => Status::Ran,
            "STATE_CHANGED" => Status::StateChanged,
            "FAILED" => Status::Failed,
            other => {
                return Err(StoreError::Other(format!(
                    "guard_deferred holds an unknown status {other:?}"
                )));
            }
        })
    }

    /// As stored and shown to the model.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Scheduled => "SCHEDULED",
            Status::Withdrawn => "WITHDRAWN",
            Status::Ran => "RAN",
            Status::StateChanged => "STATE_CHANGED",
            Status::Failed => "FAILED",
        }
    }
}

/// A row of `guard_deferred`, with what only guard reads.
#[derive(Debug)]
struct Stored {
    call: Deferred,
    owner: Owner,
    arguments: Value,
    form: Value,
    fingerprint: String,
    status: Status,
    closed_at: Option<i64>,
    result: Option<Value>,
    trace_id: String,
}

impl Stored {
    fn from_row(row: &Row) -> Result<Self, StoreError> {
        let json = |column: &str, text: &str| -> Result<Value, StoreError> {
            serde_json::from_str(text).map_err(|e| {
                StoreError::Other(format!(
                    "guard_deferred holds {column} that is not JSON: {e}"
                ))
            })
        };
        Ok(Self {
            call: Deferred {
                operation_id: row.text("operation_id")?.to_owned(),
                tool: row.text("tool")?.to_owned(),
                target: row.text("target")?.to_owned(),
                created_at: row.int("created_at")?,
                due_at: row.int("due_at")?,
            },
            owner: Owner::from_row(row)?,
            arguments: json("arguments", row.text("arguments")?)?,
            form: json("a form", row.text("form")?)?,
            fingerprint: row.text("fingerprint")?.to_owned(),
            status: Status::parse(row.text("status")?)?,
            closed_at: row.opt_int("closed_at")?,
            result: row
                .opt_text("result")?
                .map(|text| json("a result", text))
                .transpose()?,
            trace_id: row.text("trace_id")?.to_owned(),
        })
    }

    fn owned_by(&self, owner: &Person) -> bool {
        self.owner.is(owner)
    }
}

/// The call `operation_id`, locked until `tx` ends (SQLite's transaction already holds the
/// one write lock); with `skip`, `None` when another transaction holds it (PostgreSQL).
async fn read_locked(
    tx: &mut Tx,
    operation_id: &str,
    skip: bool,
) -> Result<Option<Stored>, StoreError> {
    let lock = match (tx.dialect(), skip) {
        (Dialect::Postgres, false) => " FOR UPDATE",
        (Dialect::Postgres, true) => " FOR UPDATE SKIP LOCKED",
        (Dialect::Sqlite, _) => "",
    };
    let sql = format!("SELECT {COLUMNS} FROM guard_deferred WHERE operation_id = $1{lock}");
    tx.query_opt(&sql, &[operation_id.into()])
        .await?
        .map(|row| Stored::from_row(&row))
        .transpose()
}
