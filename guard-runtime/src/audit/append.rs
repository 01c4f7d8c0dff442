//! Writing the log: an entry at its place in the caller's transaction or its own, an entry
//! committed after the caller's last writes and their check, and the audit writer's group
//! commits with the request states they spend.

use std::sync::Arc;

use super::{
    Event,
    head::{Head, commit_at, lock_and_head, lock_head},
    log::AuditLog,
    sequencer::queue_insert,
};
use crate::store::{Dialect, Done, Statement, StoreError, Tx, spent::Spend};

/// What a caller's last writes must have done for its transaction to commit (see
/// [`AuditLog::commit_with`]).
pub(crate) type Check = Box<dyn FnOnce(&[Done]) -> Result<(), StoreError> + Send>;

impl AuditLog {
    /// Writes `event` inside `tx`, to commit or roll back with the caller's effect: queued
    /// on PostgreSQL (call [`queued_committed`](Self::queued_committed) after the commit), at
    /// its place on SQLite.
    pub(crate) async fn record_in(&self, tx: &mut Tx, event: &Event) -> Result<(), StoreError> {
        match tx.dialect() {
            Dialect::Postgres => tx.pipeline(&[queue_insert(event)]).await.map(drop),
            Dialect::Sqlite => self.append(Some(tx), event).await.map(drop),
        }
    }

    /// Tells this process's sequencer that a transaction holding a queued entry committed.
    pub(crate) fn queued_committed(&self) {
        self.sequencer.ring(&self.store);
    }

    /// Runs `last` (the caller's own last writes), lets `check` look at what they did, then
    /// writes `event` and commits; a refused check rolls everything back. One trip to the
    /// store: on SQLite the check and the entry's place in the log are worked out on the
    /// store's thread, between the statements; on PostgreSQL the entry is queued (taking no
    /// lock) and sent with `last` and the `COMMIT`, unless a check must see `last`'s answers
    /// first (then two trips).
    pub(crate) async fn commit_with(
        &self,
        tx: Tx,
        mut last: Vec<Statement>,
        event: &Event,
        check: Option<Check>,
    ) -> Result<(), StoreError> {
        match tx.dialect() {
            Dialect::Postgres => {
                let mut tx = tx;
                if let Some(check) = check {
                    let done = tx.pipeline(&last).await?;
                    check(&done)?;
                    last.clear();
                }
                last.push(queue_insert(event));
                tx.commit_after(last).await?;
                self.queued_committed();
                Ok(())
            }
            Dialect::Sqlite => {
                let mine = last.len();
                last.extend(lock_and_head(tx.dialect()));
                let event = event.clone();
                let then = move |mut done: Vec<Done>| {
                    let head = done.pop().and_then(|d| d.rows.into_iter().next());
                    done.truncate(mine);
                    if let Some(check) = check {
                        check(&done)?;
                    }
                    Ok(vec![Head::after(head.as_ref())?.next(&event)])
                };
                tx.commit_then(last, Box::new(then)).await
            }
        }
    }

    /// Appends `event`: inside `tx` when given (it commits or rolls back with the caller's
    /// effect), else in a transaction of its own. Returns the entry's sequence number.
    pub async fn append(&self, tx: Option<&mut Tx>, event: &Event) -> Result<u64, StoreError> {
        match tx {
            Some(tx) => {
                let mut head = lock_head(tx).await?;
                let seq = head.seq as u64;
                tx.pipeline(&[head.next(event)]).await?;
                Ok(seq)
            }
            None => {
                let mut tx = self.store.begin().await?;
                let head = lock_head(&mut tx).await?;
                commit_at(tx, head, event).await
            }
        }
    }

    /// Appends `events` in order, in one transaction of their own: one commit for all.
    pub async fn append_all(&self, events: &[Event]) -> Result<(), StoreError> {
        self.write_group(events, &[]).await.map(drop)
    }

    /// Spends `spends` and appends `events` in order, in one transaction: one commit for
    /// all, in one trip on SQLite. A spend's own event, if it has one, is appended after
    /// them only if the spend was fresh. Says, spend by spend, whether it was (false: the
    /// state was already spent, and this commit changed nothing about it).
    pub(crate) async fn write_group(
        &self,
        events: &[Event],
        spends: &[(Spend, Option<Event>)],
    ) -> Result<Vec<bool>, StoreError> {
        if events.is_empty() && spends.is_empty() {
            return Ok(Vec::new());
        }
        let tx = self.store.begin().await?;
        // In the nonces' order: two groups spending the same states (replays racing on two
        // replicas) then wait on each other's rows in one order and never deadlock.
        let mut order: Vec<usize> = (0..spends.len()).collect();
        order.sort_by(|a, b| spends[*a].0.cmp(&spends[*b].0));
        let mut first: Vec<Statement> = order.iter().map(|i| spends[*i].0.statement()).collect();
        let appends = !events.is_empty() || spends.iter().any(|(_, event)| event.is_some());
        if appends {
            first.extend(lock_and_head(tx.dialect()));
        }
        let fresh = Arc::new(std::sync::OnceLock::new());
        let told = fresh.clone();
        let (events, spends) = (events.to_vec(), spends.to_vec());
        let then = move |mut done: Vec<Done>| {
            let head = match appends {
                true => done.pop().and_then(|d| d.rows.into_iter().next()),
                false => None,
            };
            let mut spent = vec![false; spends.len()];
            for (done, i) in done.iter().zip(&order) {
                spent[*i] = done.changed == 1;
            }
            let mut entries = Vec::new();
            if appends {
                let mut head = Head::after(head.as_ref())?;
                let theirs = spends.iter().zip(&spent).filter(|(_, fresh)| **fresh);
                let more = theirs.filter_map(|((_, event), _)| event.as_ref());
                entries = events
                    .iter()
                    .chain(more)
                    .map(|event| head.next(event))
                    .collect();
            }
            let _ = told.set(spent);
            Ok(entries)
        };
        tx.commit_then(first, Box::new(then)).await?;
        fresh
            .get()
            .cloned()
            .ok_or_else(|| StoreError::Column("the group's spends were not counted".into()))
    }
}
