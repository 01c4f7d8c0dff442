//! An approval as an MCP Task: the arguments it runs with, what `tasks/get` shows, the
//! claim of its one run at a time, its cancellation and its ending, kept in the store beside
//! the approval so every replica answers alike.

use std::time::{Duration, SystemTime};

use super::Desk;
use crate::{
    approval::{
        ledger,
        settle::{ended, given, settled, subject},
        state::Status,
    },
    person::Person,
    store::StoreError,
};

/// A task as `tasks/get` shows it: the approval it waits for, and the task's own row.
pub struct TaskView {
    pub id: String,
    pub tool: String,
    pub message: Option<String>,
    /// What the approvers are shown (the preview's summary and the terms of reversing it).
    pub summary: String,
    pub requester: Person,
    pub required: u8,
    /// Approvals given so far.
    pub given: usize,
    pub status: Status,
    pub created_at: SystemTime,
    pub expires_at: SystemTime,
    /// The call's arguments, as canonical JSON.
    pub arguments: String,
    /// How the task ended (`completed` or `failed`) and its payload (JSON), once it did.
    pub ended: Option<(String, String)>,
}

impl Desk {
    /// Makes approval `id` a task running the call with `arguments` (canonical JSON), if it is
    /// not one already: a tasks client's later call takes up an approval an MRTR call opened.
    pub async fn make_task(&self, id: &str, arguments: &str) -> Result<(), StoreError> {
        in_tx!(self, |tx| {
            ledger::insert_task(tx, id, arguments).await?;
            Ok(((), Vec::new()))
        })
    }

    /// Task `id` as `tasks/get` shows it: the approval where it stands (expired first if
    /// pending past its deadline) and the task's own row. `None` when no task has that id.
    pub async fn task(&self, id: &str) -> Result<Option<TaskView>, StoreError> {
        in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(row) = ledger::task(tx, id).await? else {
                return Ok((None, events));
            };
            let Some(record) = settled(tx, id, false, &self.rules(), &mut events).await? else {
                return Ok((None, events));
            };
            let given = given(tx, &record, &self.rules()).await?.len();
            let view = TaskView {
                id: record.id,
                tool: record.tool,
                message: record.message,
                summary: record.summary,
                requester: record.requester,
                required: record.required,
                given,
                status: record.status,
                created_at: ledger::system_time(record.created_at),
                expires_at: ledger::system_time(record.expires_at),
                arguments: row.arguments,
                ended: row.ended,
            };
            Ok((Some(view), events))
        })
    }

    /// Claims the run of decided task `id` for `runner`: true for the one `tasks/get` (across
    /// replicas) that runs it now; false while another runs it, or once it ended. A claim
    /// older than `stale` is taken over (its runner stopped); the approval's use row still
    /// lets the effect run at most once.
    pub async fn claim_run(
        &self,
        id: &str,
        runner: &str,
        stale: Duration,
    ) -> Result<bool, StoreError> {
        let stale = i64::try_from(stale.as_millis()).unwrap_or(i64::MAX / 2);
        in_tx!(self, |tx| {
            let now = ledger::now(tx).await?;
            let claimed = ledger::claim_run(tx, id, runner, now, now.saturating_sub(stale)).await?;
            Ok((claimed, Vec::new()))
        })
    }

    /// Cancels task `id` (`tasks/cancel`): a pending approval is withdrawn, and the task ends
    /// as cancelled with `said` unless a run already claimed it (that run ends it). Either way
    /// nothing runs on the approval afterwards: [`take_answer`](Self::take_answer) hands
    /// nothing over for a cancelled task, and the approval is locked meanwhile, so a call
    /// taking it up and the cancellation take turns. Recorded as the approval's withdrawal,
    /// with `reason` `tasks/cancel`. True if the task ended as cancelled.
    pub async fn cancel_task(&self, id: &str, said: &str) -> Result<bool, StoreError> {
        in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(record) = settled(tx, id, true, &self.rules(), &mut events).await? else {
                return Ok((false, events));
            };
            let now = ledger::now(tx).await?;
            if record.status == Status::Pending {
                ledger::end(tx, id, &Status::Withdrawn, None, now).await?;
            }
            let cancelled = ledger::end_task(tx, id, "cancelled", said).await?;
            if record.status == Status::Pending || cancelled {
                let given = given(tx, &record, &self.rules()).await?;
                events.push(
                    ended(
                        &subject(&record),
                        &Status::Withdrawn,
                        None,
                        &given,
                        record.required,
                    )
                    .field("reason", "tasks/cancel")
                    .field("was", status_name(&record.status)),
                );
            }
            Ok((cancelled, events))
        })
    }

    /// Ends task `id` as `ended` (`completed` or `failed`) with `result` (JSON); the first
    /// ending stands, and is what every later `tasks/get` answers.
    pub async fn end_task(&self, id: &str, ended: &str, result: &str) -> Result<(), StoreError> {
        in_tx!(self, |tx| {
            ledger::end_task(tx, id, ended, result).await?;
            Ok(((), Vec::new()))
        })
    }
}

/// A status as the records spell it.
fn status_name(status: &Status) -> &'static str {
    match status {
        Status::Pending => "pending",
        Status::Approved => "approved",
        Status::Rejected { .. } => "rejected",
        Status::Expired => "expired",
        Status::Withdrawn => "withdrawn",
    }
}
