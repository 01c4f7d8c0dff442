//! Entries committed with their effect, sequenced after (as Trillian and Tessera integrate
//! queued entries): on PostgreSQL a guarded transaction inserts its entry into
//! `guard_audit_queue`, taking no log-wide lock, so concurrent calls commit as the store's
//! group commit allows; a sequencer moves what is queued into `guard_audit_log` in
//! batches, giving each entry its place and chain hash in the order it integrates them.
//!
//! One sequencer at a time per store: a batch runs under the log's transaction-scoped
//! advisory lock (the one [`AuditLog::append`](super::AuditLog::append) takes), so a
//! sequencer whose process or backend dies releases it with its transaction, and the next
//! batch of any process takes over. Each server process runs a sequencer task from when it
//! opens its log (a guard's pipeline starts it) until the log is dropped, busy or idle: it
//! looks at once, then whenever its own commits ring and every [`IDLE`] (which picks up what
//! another, perhaps dead, process left queued), at most once every [`PACE`]: one batch then
//! takes every entry its commits queued in between, and the sequencers of many processes do
//! not take turns trying the lock on every commit. A batch
//! inserts its entries into the log and deletes them from the queue in one transaction; the
//! database holds the rest: a unique index on `guard_audit_log (queue_id)` refuses an entry
//! sequenced twice, and a trigger refuses to delete a queued entry the log does not hold.
//! A queued row that commits late with a lower id than rows already sequenced is simply
//! integrated by a later batch: places follow integration, not queue ids.
//!
//! SQLite has no queue: its transactions already begin with the database's write lock, so
//! a writer reads the head and writes its entry inline at no extra cost in turns.

use std::{
    sync::{
        Arc, OnceLock, Weak,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use tokio::sync::Notify;

use super::{
    Event,
    head::{Head, head_statement, indexed},
    merkle::Hash,
};
use crate::{
    canonical::hex,
    store::{
        Dialect, OperationStore, Statement, StoreError, Tx,
        lock::{self, Lock},
        now_ms,
    },
};
use rmcp_guard_log::placed;

/// The most entries one batch integrates: a bound on one transaction's size, not on how
/// many wait (a full batch is followed at once by the next).
pub(crate) const BATCH: usize = 512;
/// How often an idle sequencer looks for entries another (perhaps dead) process queued: the
/// bound on how long such an entry waits for its place.
pub(crate) const IDLE: Duration = Duration::from_secs(1);
/// The least time between two tries of one sequencer, whatever rings meanwhile: bounds how
/// often the sequencers of many processes try the lock, and gathers a busy store's entries
/// into batches. An entry waits about this long for its place.
const PACE: Duration = Duration::from_millis(50);

/// The queue: an entry's body (its canonical bytes without its place) and the columns it is
/// found by, under an id of the engine's (`{id}`).
const QUEUE_TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_audit_queue (
    id           {id},
    body         TEXT NOT NULL,
    trace_id     TEXT NOT NULL,
    tool         TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    tenant       TEXT,
    user_id      TEXT,
    operation_id TEXT,
    at           BIGINT NOT NULL
);";

/// After the queue on PostgreSQL: the log's column naming what it integrated, and the
/// trigger that keeps an entry in the queue until the log holds it.
const QUEUE_POSTGRES: &str = r#"
CREATE INDEX IF NOT EXISTS guard_audit_queue_trace ON guard_audit_queue (trace_id);
ALTER TABLE guard_audit_log ADD COLUMN IF NOT EXISTS queue_id BIGINT;
CREATE UNIQUE INDEX IF NOT EXISTS guard_audit_log_queue ON guard_audit_log (queue_id);
CREATE OR REPLACE FUNCTION guard_audit_queue_sequenced() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    present boolean;
BEGIN
    EXECUTE pg_catalog.format(
        'SELECT EXISTS (SELECT 1 FROM %I.guard_audit_log WHERE queue_id = $1)', TG_TABLE_SCHEMA)
        INTO present USING OLD.id;
    IF NOT present THEN
        RAISE EXCEPTION 'guard: queued audit entry % is not in the log yet and may not be deleted', OLD.id
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Only the sequencer removes a queued entry, in the transaction that writes it to guard_audit_log.';
    END IF;
    RETURN OLD;
END
$guard$;
DROP TRIGGER IF EXISTS guard_audit_queue_sequenced ON guard_audit_queue;
CREATE TRIGGER guard_audit_queue_sequenced BEFORE DELETE ON guard_audit_queue
    FOR EACH ROW EXECUTE FUNCTION guard_audit_queue_sequenced();
"#;

/// SQLite's queue has the same shape and stays empty (writers sequence inline), so readers
/// read one schema on both engines.
const QUEUE_SQLITE: &str = "
ALTER TABLE guard_audit_log ADD COLUMN queue_id BIGINT;
CREATE UNIQUE INDEX IF NOT EXISTS guard_audit_log_queue ON guard_audit_log (queue_id);
";

/// Applies the queue's schema step.
pub(crate) async fn create_queue(tx: &mut Tx) -> Result<(), StoreError> {
    let (id, rest) = match tx.dialect() {
        Dialect::Postgres => (
            "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
            QUEUE_POSTGRES,
        ),
        Dialect::Sqlite => ("INTEGER PRIMARY KEY AUTOINCREMENT", QUEUE_SQLITE),
    };
    tx.batch(&format!("{}{rest}", QUEUE_TABLE.replace("{id}", id)))
        .await
}

/// The statement that queues `event` inside the caller's transaction.
pub(crate) fn queue_insert(event: &Event) -> Statement {
    let at = event.time().unwrap_or_else(now_ms);
    Statement::execute(
        "INSERT INTO guard_audit_queue
            (body, trace_id, tool, outcome, tenant, user_id, operation_id, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        std::iter::once(event.body(at).into())
            .chain(indexed(event, at))
            .collect(),
    )
}

/// What the queue holds, oldest id first, at most one batch.
const QUEUED: &str = "SELECT id, body, trace_id, tool, outcome, tenant, user_id, operation_id, at
     FROM guard_audit_queue ORDER BY id LIMIT $1";

/// One process's sequencer of one store: a task started when a server opens the log (or
/// on the first entry this process queues), and the bell its commits ring. The task ends
/// when the sequencer or the store is dropped.
pub(crate) struct Sequencer {
    bell: Arc<Notify>,
    task: OnceLock<()>,
    /// Whether this process queued an entry: a settle then sequences before it returns.
    queued: AtomicBool,
}

impl Sequencer {
    pub(crate) fn new() -> Self {
        Self {
            bell: Arc::new(Notify::new()),
            task: OnceLock::new(),
            queued: AtomicBool::new(false),
        }
    }

    /// Starts the task on the caller's runtime, if there is one and it is not running yet:
    /// it looks at once, then every [`IDLE`] and whenever rung. On SQLite it ends after its
    /// first look (nothing is ever queued there).
    pub(crate) fn start(&self, store: &Arc<dyn OperationStore>) {
        if self.task.get().is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            self.task.get_or_init(|| {
                let store = Arc::downgrade(store);
                runtime.spawn(run(store, Arc::downgrade(&self.bell)));
                self.bell.notify_one();
            });
        }
    }

    /// Rings after a commit that queued an entry, starting the task if it is not running.
    pub(crate) fn ring(&self, store: &Arc<dyn OperationStore>) {
        self.queued.store(true, Ordering::Relaxed);
        self.start(store);
        self.bell.notify_one();
    }

    /// Whether this process queued an entry since it opened the log.
    pub(crate) fn has_queued(&self) -> bool {
        self.queued.load(Ordering::Relaxed)
    }
}

impl Drop for Sequencer {
    /// Wakes the task, which finds the sequencer gone and ends.
    fn drop(&mut self) {
        self.bell.notify_one();
    }
}

/// The task: sequences after a ring or [`IDLE`], at most once every [`PACE`], while the
/// sequencer and the store live. Found busy, it rings itself: the holder may have read the
/// queue before this process's entries committed.
async fn run(store: Weak<dyn OperationStore>, bell: Weak<Notify>) {
    loop {
        let Some(rung) = bell.upgrade() else {
            return;
        };
        let _ = tokio::time::timeout(IDLE, rung.notified()).await;
        drop(rung);
        let tried = tokio::time::Instant::now();
        let (Some(store), true) = (store.upgrade(), bell.strong_count() > 0) else {
            return;
        };
        match drain(&*store, Wait::No).await {
            Ok(Drained::Inline) => return,
            Ok(Drained::Busy) => {
                if let Some(bell) = bell.upgrade() {
                    bell.notify_one();
                }
            }
            Ok(Drained::Placed(_)) => {}
            Err(error) => {
                tracing::error!(target: "guard::audit", %error, "could not sequence queued audit entries; retrying on the next commit or within a second");
            }
        }
        drop(store);
        tokio::time::sleep_until(tried + PACE).await;
    }
}

/// Whether a batch waits for the log's lock or leaves the work to whoever holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Wait for it (a flush: everything committed before it is sequenced when it returns).
    Yes,
    /// Try once, reading nothing when another sequencer holds it.
    No,
}

/// What a drain did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drained {
    /// It placed this many entries; the queue was empty when it ended.
    Placed(u64),
    /// Not waiting, it found another sequencer holding the lock and read nothing.
    Busy,
    /// The store sequences inline (SQLite): nothing is ever queued.
    Inline,
}

/// Sequences batches until the queue is empty.
pub(crate) async fn drain(store: &dyn OperationStore, wait: Wait) -> Result<Drained, StoreError> {
    let mut total = 0;
    loop {
        match batch(store, wait).await? {
            Batch::Engine => return Ok(Drained::Inline),
            Batch::Busy => return Ok(Drained::Busy),
            Batch::Done(n) => {
                total += n as u64;
                if n < BATCH {
                    return Ok(Drained::Placed(total));
                }
            }
        }
    }
}

enum Batch {
    /// SQLite: nothing is ever queued.
    Engine,
    /// Another sequencer holds the lock.
    Busy,
    /// This many entries were integrated.
    Done(usize),
}

/// One batch in one transaction: take the lock, read the queue and the head, then write the
/// entries, delete them from the queue and commit (one trip). Waiting, the lock goes with
/// the reads (one trip); not waiting, it is tried alone first, so a sequencer that finds it
/// held reads nothing. The reads follow the lock in statements of their own: each sees
/// what the previous holder committed.
async fn batch(store: &dyn OperationStore, wait: Wait) -> Result<Batch, StoreError> {
    let mut tx = store.begin().await?;
    if tx.dialect() == Dialect::Sqlite {
        tx.rollback().await?;
        return Ok(Batch::Engine);
    }
    let mut statements: Vec<Statement> = match wait {
        Wait::Yes => lock::statement(Dialect::Postgres, Lock::AuditAppend)
            .into_iter()
            .collect(),
        Wait::No if lock::try_hold(&mut tx, Lock::AuditAppend).await? => Vec::new(),
        Wait::No => {
            tx.rollback().await?;
            return Ok(Batch::Busy);
        }
    };
    statements.push(Statement::query(QUEUED, vec![(BATCH as i64).into()]));
    statements.push(head_statement());
    let mut done = tx.pipeline(&statements).await?;
    let last = done.pop().and_then(|d| d.rows.into_iter().next());
    let queued = done.pop().map(|d| d.rows).unwrap_or_default();
    if queued.is_empty() {
        tx.rollback().await?;
        return Ok(Batch::Done(0));
    }
    let mut head = Head::after(last.as_ref())?;
    let mut writes = Vec::with_capacity(queued.len() * 2);
    for row in &queued {
        let id = row.int("id")?;
        writes.push(head.integrate(row, id)?);
        writes.push(Statement::execute(
            "DELETE FROM guard_audit_queue WHERE id = $1",
            vec![id.into()],
        ));
    }
    tx.commit_after(writes).await?;
    Ok(Batch::Done(queued.len()))
}

impl Head {
    /// The statement that stores the queued `row` (queue id `id`) here; the head moves past
    /// it.
    fn integrate(&mut self, row: &crate::store::Row, id: i64) -> Result<Statement, StoreError> {
        let entry = placed(self.seq as u64, &self.prev, row.text("body")?);
        let leaf: Hash = rmcp_guard_log::entry_hash(entry.as_bytes());
        let statement = Statement::execute(
            "INSERT INTO guard_audit_log
                (seq, hash, entry, trace_id, tool, outcome, tenant, user_id, operation_id, at,
                 queue_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            vec![
                self.seq.into(),
                hex(&leaf).into(),
                entry.into(),
                row.text("trace_id")?.into(),
                row.text("tool")?.into(),
                row.text("outcome")?.into(),
                row.opt_text("tenant")?.map(str::to_owned).into(),
                row.opt_text("user_id")?.map(str::to_owned).into(),
                row.opt_text("operation_id")?.map(str::to_owned).into(),
                row.int("at")?.into(),
                id.into(),
            ],
        );
        self.seq += 1;
        self.prev = leaf;
        Ok(statement)
    }
}
