//! Purging windows whose deadline passed: the author's purge runs once per window, across
//! restarts and across processes sharing the store. Each window is claimed in a
//! transaction of its own: on PostgreSQL with `FOR UPDATE SKIP LOCKED` (a window another
//! process is purging, or an undo holds, is passed over), on SQLite under the store's one
//! writer. Its status and deadline are re-read under the claim, against the database's clock
//! (never a time a caller passes, nor this process's clock), so a window undone, purged, or
//! not yet due is left alone; it closes in the transaction that records its purge.

use std::{future::Future, time::Duration};

use super::{COLUMNS, Status, Stored, UndoWindows, Window};
use crate::{
    audit::Event,
    outcome::Outcome,
    store::{Dialect, StoreError, Tx, ledger::clock},
};

/// The most windows one pass looks at; a larger backlog goes over the next passes.
const BATCH: i64 = 100;

impl UndoWindows {
    /// Runs the author's `purge` on every window whose deadline the database's clock says
    /// passed, each at most once, and closes it as `PURGED` with its audit record. No caller
    /// passes a time: a window is purged no earlier than the human was told, however this is
    /// driven. A purge that fails leaves its window for the next pass (logged); the rest go
    /// on. Returns how many windows this call purged.
    ///
    /// The author's purge should tolerate running again after a crash between its effect and
    /// the commit (a file already gone is purged), as any effect outside the store must.
    pub(crate) async fn purge_due<Fut>(
        &self,
        mut purge: impl FnMut(Window) -> Fut,
    ) -> Result<u64, StoreError>
    where
        Fut: Future<Output = Result<(), String>>,
    {
        let mut tx = self.store.begin().await?;
        let sql = format!(
            "SELECT operation_id FROM guard_undo WHERE status = 'OPEN' AND expires_at <= {}
             ORDER BY expires_at LIMIT $1",
            clock::now_sql(tx.dialect())
        );
        let due: Vec<String> = tx
            .query(&sql, &[BATCH.into()])
            .await?
            .iter()
            .map(|row| row.text("operation_id").map(str::to_owned))
            .collect::<Result<_, _>>()?;
        tx.rollback().await?;
        let mut purged = 0;
        for id in due {
            let mut tx = self.store.begin().await?;
            let Some(stored) = claim(&mut tx, &id).await? else {
                tx.rollback().await?;
                continue;
            };
            let window = stored.window;
            if let Err(reason) = purge(window.clone()).await {
                tracing::warn!(operation_id = %id, tool = %window.tool, %reason, "the purge of an undo window failed; the next pass tries again");
                tx.rollback().await?;
                continue;
            }
            let closed_at = clock::now(&mut tx).await?;
            tx.execute(
                "UPDATE guard_undo SET status = 'PURGED', closed_at = $2
                 WHERE operation_id = $1 AND status = 'OPEN'",
                &[id.as_str().into(), closed_at.into()],
            )
            .await?;
            let record = Event::new(
                window.tool.as_str(),
                Outcome::UndoPurged,
                crate::trace::new_id(),
            )
            .identity(&stored.owner.tenant, &stored.owner.user)
            .field("operation_id", id.as_str())
            .field("target", window.target.as_str());
            self.commit(tx, Vec::new(), &record).await?;
            purged += 1;
        }
        Ok(purged)
    }
}

/// The task a server runs to purge due windows in the background; it stops when this is
/// dropped (with the server that holds it), and is gone, with
/// the server clone it held, when the drop returns. Only [`crate::purge_undo_windows`] starts one.
#[derive(Debug)]
pub struct Purger(#[expect(dead_code, reason = "held for its drop")] crate::blocking::Background);

impl UndoWindows {
    /// Runs [`purge_due`](Self::purge_due) with the author's `purge` every `every`, from now
    /// until the returned [`Purger`] is dropped. Processes sharing a store may each run one:
    /// every window is still purged once. A failed pass is logged and the next one retries.
    pub(crate) fn purge_in_background<F, Fut>(&self, every: Duration, purge: F) -> Purger
    where
        F: Fn(Window) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let windows = self.clone();
        Purger(crate::blocking::Background::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = windows.purge_due(&purge).await {
                    tracing::warn!(%error, "purging due undo windows failed; the next pass tries again");
                }
            }
        }))
    }
}

/// The window `id` if it is still open and due by the database's clock, held until `tx`
/// ends; `None` if another transaction holds it (PostgreSQL) or it closed since it was
/// listed.
async fn claim(tx: &mut Tx, id: &str) -> Result<Option<Stored>, StoreError> {
    let lock = match tx.dialect() {
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM guard_undo
         WHERE operation_id = $1 AND status = 'OPEN'{lock}"
    );
    let stored = tx
        .query_opt(&sql, &[id.into()])
        .await?
        .map(|row| Stored::from_row(&row))
        .transpose()?;
    // Due by the database's clock, read under the claim.
    let now = clock::now(tx).await?;
    Ok(stored.filter(|s| s.status == Status::Open && s.window.expires_at <= now))
}
