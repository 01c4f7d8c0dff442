//! The log in the operation store: `guard_audit_log`, one row per entry,
//! `guard_audit_checkpoints`, the checkpoints signed so far, and `guard_audit_cosignatures`,
//! the witnesses' cosignature lines of those checkpoints.
//!
//! [`AuditLog::append`] assigns an entry's sequence number inside the writing transaction,
//! after taking the log's lock: SQLite's transactions begin with `BEGIN IMMEDIATE` (the
//! database's write lock); on PostgreSQL a transaction-scoped advisory lock. Processes
//! appending to one store therefore take turns and never fork the log; the primary key on
//! `seq` refuses a second entry at a place even if a lock were missing.
//!
//! Guarded calls on PostgreSQL do not take that turn: their entries are queued with the
//! effect and sequenced after ([`super::sequencer`]). An entry committed but not yet
//! sequenced is *pending* ([`AuditLog::pending`]): the server's own reads sequence what is
//! queued first ([`AuditLog::sequence`]); a [`read_only`](AuditLog::read_only) reader, such
//! as the verifier, reports it as pending.

use std::sync::Arc;

use serde_json::Value;

use super::{
    CheckpointSigner, Event,
    merkle::{Hash, root},
    sequencer::{self, Drained, Sequencer, Wait, queue_insert},
    verify::{Fault, FaultKind, Item, Verified, verify_against},
};
use crate::{
    canonical::hex,
    store::{
        Dialect, Done, OperationStore, Row, SqlValue, Statement, StoreError, Tx,
        lock::{self, Lock},
        now_ms,
        spent::Spend,
    },
};
use rmcp_guard_log::{entry_hash, parse_hex, place};

/// The table of witness cosignatures: one row per cosignature line of a stored checkpoint.
pub(crate) const COSIGNATURES_TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_audit_cosignatures (
    size      BIGINT NOT NULL,
    signature TEXT NOT NULL,
    at        BIGINT NOT NULL,
    PRIMARY KEY (size, signature)
)";

/// What a caller's last writes must have done for its transaction to commit (see
/// [`AuditLog::commit_with`]).
pub(crate) type Check = Box<dyn FnOnce(&[Done]) -> Result<(), StoreError> + Send>;

/// The audit log in an operation store.
#[derive(Clone)]
pub struct AuditLog {
    store: Arc<dyn OperationStore>,
    origin: Arc<str>,
    sequencer: Arc<Sequencer>,
    /// Whether reads sequence what is queued first (not for a verifier, which never writes).
    settles: bool,
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

impl AuditLog {
    /// The store the log is kept in (the approval page keeps its approvals there too, and
    /// the audit writer purges spent request states in it).
    pub(crate) fn store(&self) -> &Arc<dyn OperationStore> {
        &self.store
    }
}

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

/// What a verification of the store found wrong, or the store failing.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The log is not what was written.
    #[error("{0}")]
    Fault(Fault),
    /// The store could not be read.
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl AuditLog {
    /// The log in `store`, its checkpoints naming it `origin` (one line, such as
    /// `example.com/orders audit`).
    pub fn new(store: impl OperationStore, origin: &str) -> Self {
        Self::shared(Arc::new(store), origin)
    }

    /// Like [`new`](Self::new), for a store already shared.
    pub fn shared(store: Arc<dyn OperationStore>, origin: &str) -> Self {
        let origin: String = origin
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        Self {
            store,
            origin: origin.trim().to_owned().into(),
            sequencer: Arc::new(Sequencer::new()),
            settles: true,
        }
    }

    /// The log as it stands, for a reader that must not write (a verifier): its reads leave
    /// queued entries where they are, and [`pending`](Self::pending) names them.
    pub fn read_only(mut self) -> Self {
        self.settles = false;
        self
    }

    /// Sequences every entry queued (committed) before this call, waiting for a sequencer
    /// of another process to finish its batch first; returns how many this call placed.
    /// Nothing is ever queued on SQLite, where this costs nothing.
    pub async fn sequence(&self) -> Result<u64, StoreError> {
        // Waiting for the lock, a drain is never turned away.
        match sequencer::drain(&*self.store, Wait::Yes).await? {
            Drained::Placed(placed) => Ok(placed),
            Drained::Busy | Drained::Inline => Ok(0),
        }
    }

    /// Keeps the log sequenced while it is open: starts this process's sequencer, which
    /// places what any process queued (a stranger's entries included) within [`IDLE`](sequencer::IDLE)
    /// (a second), idle or not, until the log is dropped. A server's guard calls it when it
    /// opens the log.
    pub(crate) fn keep_sequenced(&self) {
        self.sequencer.start(&self.store);
    }

    /// Sequences what this process queued, if it queued anything: the last step of a
    /// settle, so a server that stops normally leaves no entry of its own pending.
    pub(crate) async fn sequence_own(&self) -> Result<(), StoreError> {
        if self.sequencer.has_queued() {
            self.sequence().await?;
        }
        Ok(())
    }

    /// The entries committed but not yet sequenced, oldest first.
    pub async fn pending(&self) -> Result<Vec<Pending>, StoreError> {
        self.queued("", &[]).await
    }

    /// The pending entries of one call.
    pub async fn pending_of(&self, trace_id: &str) -> Result<Vec<Pending>, StoreError> {
        self.queued(" WHERE trace_id = $1", &[trace_id.into()])
            .await
    }

    async fn queued(&self, filter: &str, params: &[SqlValue]) -> Result<Vec<Pending>, StoreError> {
        self.read(
            &format!(
                "SELECT trace_id, tool, outcome, at FROM guard_audit_queue{filter} ORDER BY id"
            ),
            params,
        )
        .await?
        .iter()
        .map(|row| {
            Ok(Pending {
                trace_id: row.text("trace_id")?.to_owned(),
                tool: row.text("tool")?.to_owned(),
                outcome: row.text("outcome")?.to_owned(),
                at: row.int("at")?,
            })
        })
        .collect()
    }

    /// Before a read of the server's own log: sequence what is queued.
    async fn settle(&self) -> Result<(), StoreError> {
        if self.settles {
            self.sequence().await?;
        }
        Ok(())
    }

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

    /// The name checkpoints carry.
    pub fn origin(&self) -> &str {
        &self.origin
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

    /// Every entry, in sequence order.
    pub async fn records(&self) -> Result<Vec<Record>, StoreError> {
        self.select("", &[]).await
    }

    /// The entries recorded at or after `at` (ms since the epoch).
    pub async fn since(&self, at: i64) -> Result<Vec<Record>, StoreError> {
        self.select(" WHERE at >= $1", &[at.into()]).await
    }

    /// The leaf hash of every entry, in sequence order, as stored: verify the log before
    /// building proofs from them.
    pub async fn leaves(&self) -> Result<Vec<Hash>, StoreError> {
        self.records()
            .await?
            .iter()
            .map(|r| {
                parse_hex(r.hash.as_bytes()).ok_or_else(|| {
                    StoreError::Column(format!(
                        "the hash of audit record {} is not a SHA-256; run guard-audit verify",
                        r.seq
                    ))
                })
            })
            .collect()
    }

    /// The entries of one call.
    pub async fn by_trace(&self, trace_id: &str) -> Result<Vec<Record>, StoreError> {
        self.select(" WHERE trace_id = $1", &[trace_id.into()])
            .await
    }

    async fn select(&self, filter: &str, params: &[SqlValue]) -> Result<Vec<Record>, StoreError> {
        self.settle().await?;
        self.read(
            &format!("SELECT seq, hash, entry FROM guard_audit_log{filter} ORDER BY seq"),
            params,
        )
        .await?
        .iter()
        .map(|row| {
            Ok(Record {
                seq: u64::try_from(row.int("seq")?).unwrap_or(u64::MAX),
                hash: row.text("hash")?.to_owned(),
                entry: row.text("entry")?.to_owned(),
            })
        })
        .collect()
    }

    /// The rows of `sql`, in a transaction that writes nothing.
    async fn read(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        crate::store::read_alone(&*self.store, sql, params).await
    }

    /// How many records the log holds.
    pub async fn size(&self) -> Result<u64, StoreError> {
        self.settle().await?;
        let mut tx = self.store.begin().await?;
        let last = tx.query_opt(LAST, &[]).await;
        tx.rollback().await?;
        Ok(last?
            .map(|row| row.int("seq"))
            .transpose()?
            .map_or(0, |seq| seq as u64 + 1))
    }

    /// The same log under another name: `origin` is what its checkpoints carry.
    pub fn named(&self, origin: &str) -> Self {
        Self {
            settles: self.settles,
            ..Self::shared(self.store.clone(), origin)
        }
    }

    /// The origin the stored checkpoints carry (the largest one's), if any is stored: the
    /// name every later checkpoint of this log must carry too.
    pub async fn stored_origin(&self) -> Result<Option<String>, StoreError> {
        Ok(self
            .latest_checkpoint()
            .await?
            .and_then(|note| note.split('\n').next().map(str::to_owned)))
    }

    /// Signs the log as it stands, stores the checkpoint with the others and returns its
    /// text. Publish the text somewhere the database's writers cannot reach.
    ///
    /// A log has one name: a checkpoint is refused when the stored ones carry another
    /// origin, so that every checkpoint of the log extends the ones before it.
    pub async fn checkpoint(&self, signer: &CheckpointSigner) -> Result<String, StoreError> {
        Ok(self.sign_checkpoint(signer).await?.0)
    }

    /// [`checkpoint`](Self::checkpoint), with the leaf hashes it signed.
    pub(crate) async fn sign_checkpoint(
        &self,
        signer: &CheckpointSigner,
    ) -> Result<(String, Vec<Hash>), StoreError> {
        self.settle().await?;
        let mut tx = self.store.begin().await?;
        lock::hold(&mut tx, Lock::AuditAppend).await?;
        let latest = tx
            .query_opt(
                "SELECT note FROM guard_audit_checkpoints ORDER BY size DESC LIMIT 1",
                &[],
            )
            .await?;
        if let Some(row) = latest {
            let stored = row.text("note")?.split('\n').next().unwrap_or_default();
            if stored != &*self.origin {
                return Err(StoreError::Other(format!(
                    "this log's checkpoints are named `{stored}`, not `{}`: name the log `{stored}` (Operations::audit_origin, AuditLog::new) so its checkpoints extend each other",
                    self.origin
                )));
            }
        }
        let rows = tx
            .query("SELECT hash FROM guard_audit_log ORDER BY seq", &[])
            .await?;
        let leaves = rows
            .iter()
            .map(|row| {
                parse_hex(row.text("hash")?.as_bytes()).ok_or_else(|| {
                    StoreError::Column("guard_audit_log.hash is not a SHA-256; run guard-audit verify to find the record".into())
                })
            })
            .collect::<Result<Vec<Hash>, _>>()?;
        let text = signer.sign(&self.origin, leaves.len() as u64, &root(&leaves));
        tx.execute(
            "INSERT INTO guard_audit_checkpoints (size, note, at) VALUES ($1, $2, $3)
             ON CONFLICT (size) DO NOTHING",
            &[
                (leaves.len() as i64).into(),
                text.as_str().into(),
                now_ms().into(),
            ],
        )
        .await?;
        tx.commit().await?;
        Ok((text, leaves))
    }

    /// Stores witness cosignature lines of the stored checkpoint of `size` (lines already
    /// checked against the witness's key; a repeated line is kept once).
    #[cfg(feature = "witness")]
    pub(crate) async fn add_cosignatures(
        &self,
        size: u64,
        lines: &[String],
    ) -> Result<(), StoreError> {
        let mut tx = self.store.begin().await?;
        for line in lines {
            tx.execute(
                "INSERT INTO guard_audit_cosignatures (size, signature, at) VALUES ($1, $2, $3)
                 ON CONFLICT (size, signature) DO NOTHING",
                &[(size as i64).into(), line.as_str().into(), now_ms().into()],
            )
            .await?;
        }
        tx.commit().await
    }

    /// Every stored checkpoint, smallest first, each with the witness cosignatures stored
    /// for it appended to its note.
    pub async fn checkpoints(&self) -> Result<Vec<String>, StoreError> {
        self.notes("").await
    }

    /// The largest checkpoint stored, with its cosignatures, if any.
    pub async fn latest_checkpoint(&self) -> Result<Option<String>, StoreError> {
        Ok(self.notes(" DESC LIMIT 1").await?.pop())
    }

    async fn notes(&self, order: &str) -> Result<Vec<String>, StoreError> {
        let mut tx = self.store.begin().await?;
        let notes = tx
            .query(
                &format!("SELECT size, note FROM guard_audit_checkpoints ORDER BY size{order}"),
                &[],
            )
            .await;
        let cosignatures = tx
            .query(
                "SELECT size, signature FROM guard_audit_cosignatures ORDER BY size, at, signature",
                &[],
            )
            .await;
        tx.rollback().await?;
        let cosignatures = cosignatures?;
        notes?
            .iter()
            .map(|row| {
                let size = row.int("size")?;
                let mut note = row.text("note")?.to_owned();
                for cosignature in &cosignatures {
                    if cosignature.int("size")? == size {
                        note.push_str(cosignature.text("signature")?);
                    }
                }
                Ok(note)
            })
            .collect()
    }

    /// Verifies the stored log (against `checkpoint` when given): each row's indexed
    /// columns must agree with its entry, and the entries must form one chain with the
    /// checkpoint's root.
    pub async fn verify(
        &self,
        checkpoint: Option<&super::Checkpoint>,
    ) -> Result<Verified, VerifyError> {
        self.verify_against(checkpoint, &[]).await
    }

    /// [`verify`](Self::verify), with `older` checkpoints of the log (checked by the caller)
    /// to name a rewrite from the first record none of them vouches for. The first bad
    /// record is named, whether its fault is in the chain or in an indexed column.
    pub async fn verify_against(
        &self,
        checkpoint: Option<&super::Checkpoint>,
        older: &[super::Checkpoint],
    ) -> Result<Verified, VerifyError> {
        self.settle().await?;
        let mut tx = self.store.begin().await?;
        let rows = tx
            .query(
                "SELECT seq, hash, entry, trace_id, tool, outcome, tenant, user_id, operation_id, at
                 FROM guard_audit_log ORDER BY seq",
                &[],
            )
            .await;
        tx.rollback().await?;
        let rows = rows?;
        let mut hashes = Vec::with_capacity(rows.len());
        for row in &rows {
            hashes.push(parse_hex(row.text("hash")?.as_bytes()));
        }
        let items: Vec<Item<'_>> = rows
            .iter()
            .zip(&hashes)
            .map(|(row, hash)| {
                Ok(Item {
                    hash: *hash,
                    entry: row.text("entry")?.as_bytes(),
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let mut column = None;
        for (position, row) in rows.iter().enumerate() {
            if let Some(name) = disagreeing_column(row)? {
                column = Some(Fault {
                    kind: FaultKind::Modified,
                    position,
                    seq: position as u64,
                    detail: format!("its column `{name}` disagrees with its hashed entry"),
                });
                break;
            }
        }
        // The earlier of the two faults; at one record, the chain's (its bytes) comes first.
        match (verify_against(&items, checkpoint, older), column) {
            (Ok(verified), None) => Ok(verified),
            (Err(chain), Some(column)) if column.position < chain.position => {
                Err(VerifyError::Fault(column))
            }
            (Err(fault), _) | (Ok(_), Some(fault)) => Err(VerifyError::Fault(fault)),
        }
    }
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// Where the next entry goes, read under the log's lock (see [`lock_head`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head {
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
    fn next(&mut self, event: &Event) -> Statement {
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
fn lock_and_head(dialect: Dialect) -> Vec<Statement> {
    let mut statements: Vec<Statement> = lock::statement(dialect, Lock::AuditAppend)
        .into_iter()
        .collect();
    statements.push(head_statement());
    statements
}

/// Takes the log's lock and reads its head, in one trip to the store. The lock is held
/// until `tx` ends, so the head stays true for [`commit_at`].
async fn lock_head(tx: &mut Tx) -> Result<Head, StoreError> {
    let mut done = tx.pipeline(&lock_and_head(tx.dialect())).await?;
    Head::after(done.pop().and_then(|d| d.rows.into_iter().next()).as_ref())
}

/// Writes `event` at `head` and commits `tx`, in one trip to the store.
async fn commit_at(tx: Tx, mut head: Head, event: &Event) -> Result<u64, StoreError> {
    let seq = head.seq as u64;
    tx.commit_after(vec![head.next(event)]).await?;
    Ok(seq)
}

/// The last entry's place and hash.
const LAST: &str = "SELECT seq, hash FROM guard_audit_log ORDER BY seq DESC LIMIT 1";

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
/// and time, as [`disagreeing_column`] checks them against the entry.
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

/// The first indexed column of `row` that says something its entry does not.
fn disagreeing_column(row: &Row) -> Result<Option<&'static str>, StoreError> {
    let Some(entry) = serde_json::from_str::<Value>(row.text("entry")?).ok() else {
        return Ok(Some("entry"));
    };
    let text = |name: &str| entry.get(name).and_then(Value::as_str);
    let seq = place(row.text("entry")?.as_bytes()).map(|p| p.seq as i64);
    Ok(if Some(row.int("seq")?) != seq {
        Some("seq")
    } else if Some(row.text("trace_id")?) != text("trace_id") {
        Some("trace_id")
    } else if Some(row.text("tool")?) != text("tool") {
        Some("tool")
    } else if Some(row.text("outcome")?) != text("outcome") {
        Some("outcome")
    } else if row.opt_text("tenant")? != text("tenant") {
        Some("tenant")
    } else if row.opt_text("user_id")? != text("user") {
        Some("user_id")
    } else if row.opt_text("operation_id")? != text("operation_id") {
        Some("operation_id")
    } else if Some(row.int("at")?) != entry.get("at").and_then(Value::as_i64) {
        Some("at")
    } else {
        None
    })
}

/// The audit table from before this log, which [`migrate_legacy`] folds into it.
pub(crate) const LEGACY_TABLE: &str = "guard_audit";

/// Moves the rows of the table the operation store used before this log, `guard_audit`,
/// into the log (oldest first, marked `legacy`) and drops it, so no second, unverifiable
/// trail remains. Runs inside the caller's transaction; a store without it is unchanged.
pub(crate) async fn migrate_legacy(tx: &mut Tx) -> Result<(), StoreError> {
    let exists = match tx.dialect() {
        Dialect::Sqlite => {
            "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'guard_audit'"
        }
        Dialect::Postgres => {
            "SELECT COUNT(*) AS n FROM pg_catalog.pg_tables
             WHERE tablename = 'guard_audit' AND schemaname = current_schema()"
        }
    };
    if tx
        .query_opt(exists, &[])
        .await?
        .map_or(0, |r| r.int("n").unwrap_or(0))
        == 0
    {
        return Ok(());
    }
    let rows = tx
        .query(
            "SELECT trace_id, tenant, user_id, tool, op, operation_id, target, summary, outcome, at
             FROM guard_audit ORDER BY audit_id",
            &[],
        )
        .await?;
    let mut head = lock_head(tx).await?;
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        let mut event = Event::new(
            row.text("tool")?,
            row.text("outcome")?,
            row.text("trace_id")?,
        )
        .at(row.int("at")?)
        .field("legacy", true);
        for (column, field) in [
            ("tenant", "tenant"),
            ("user_id", "user"),
            ("op", "op"),
            ("operation_id", "operation_id"),
            ("target", "target"),
            ("summary", "summary"),
        ] {
            if let Some(value) = row.opt_text(column)?.filter(|v| !v.is_empty()) {
                event = event.field(field, value);
            }
        }
        entries.push(head.next(&event));
    }
    tx.pipeline(&entries).await?;
    tx.execute("DROP TABLE guard_audit", &[]).await?;
    Ok(())
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
