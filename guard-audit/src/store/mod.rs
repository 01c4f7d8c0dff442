//! The audit log as the operation store holds it, read the way the server wrote it:
//! `guard_audit_log` (one row per entry), `guard_audit_queue` (entries committed and not yet
//! sequenced), `guard_audit_checkpoints` and `guard_audit_cosignatures`. Every command opens
//! the store read-only except `checkpoint`, which writes what it signs
//! ([`checkpoint`](self::checkpoint)); none creates or migrates anything ([`schema`]).

mod checkpoint;
mod copy;
mod db;
mod schema;

use std::path::Path;

use rmcp_guard_log::{
    Checkpoint, Fault, Pending, Record, Row, Verified, merkle::Hash, parse_hex, verify_rows,
};

pub(crate) use checkpoint::now_ms;
use db::{Db, Param};

/// What a verification of the store found wrong, or the store failing.
pub(crate) enum VerifyError {
    /// The log is not what was written.
    Fault(Fault),
    /// The store could not be read.
    Store(String),
}

/// The log in one store.
pub(crate) struct Log {
    db: Db,
}

impl Log {
    /// The SQLite store at `path`, read-only unless `write`: refused, and left as it was,
    /// when it is not one this build reads ([`schema::check`]), or when a writer finds it
    /// outside WAL mode (the server leaves its store in WAL mode).
    pub(crate) async fn sqlite(path: &Path, write: bool) -> Result<Self, String> {
        let shown = path.display();
        if write {
            // Refused by a reader first: a refusal must leave the file as it was, and a
            // writable open of a WAL file rewrites what is beside it even when it writes
            // nothing.
            drop(Box::pin(Self::sqlite(path, false)).await?);
        }
        let db = Db::sqlite(path, write)?;
        schema::check(&db)
            .await
            .map_err(|e| format!("{shown}: {e}"))?;
        if write {
            let mode = db.read("PRAGMA journal_mode", &[]).await?;
            let mode = mode
                .first()
                .map(|row| row.text("journal_mode"))
                .transpose()?
                .unwrap_or_default()
                .to_owned();
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(format!(
                    "{shown} is not in WAL mode (journal mode is {mode}), as guard's server \
                     leaves its store; open it with the server once"
                ));
            }
        }
        Ok(Self { db })
    }

    /// The PostgreSQL store at `url` (its schema is the first of the connection's
    /// `search_path`), in `READ ONLY` transactions unless `write`, refused when it is not
    /// one this build reads ([`schema::check`]).
    pub(crate) async fn postgres(url: &str, write: bool) -> Result<Self, String> {
        let db = Db::postgres(url, write).await?;
        schema::check(&db)
            .await
            .map_err(|e| format!("refused to read the PostgreSQL store: {e}"))?;
        Ok(Self { db })
    }

    /// Every entry, in sequence order.
    pub(crate) async fn records(&self) -> Result<Vec<Record>, String> {
        self.select("", &[]).await
    }

    /// The entries recorded at or after `at` (ms since the epoch).
    pub(crate) async fn since(&self, at: i64) -> Result<Vec<Record>, String> {
        self.select(" WHERE at >= $1", &[at.into()]).await
    }

    /// The entries of one call.
    pub(crate) async fn by_trace(&self, trace_id: &str) -> Result<Vec<Record>, String> {
        self.select(" WHERE trace_id = $1", &[trace_id.into()])
            .await
    }

    async fn select(&self, filter: &str, params: &[Param]) -> Result<Vec<Record>, String> {
        self.db
            .read(
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

    /// The leaf hash of every entry, in sequence order, as stored: verify the log before
    /// building proofs from them.
    pub(crate) async fn leaves(&self) -> Result<Vec<Hash>, String> {
        self.records()
            .await?
            .iter()
            .map(|r| {
                parse_hex(r.hash.as_bytes()).ok_or_else(|| {
                    format!(
                        "the hash of audit record {} is not a SHA-256; run guard-audit verify",
                        r.seq
                    )
                })
            })
            .collect()
    }

    /// The entries committed but not yet sequenced, oldest first.
    pub(crate) async fn pending(&self) -> Result<Vec<Pending>, String> {
        self.queued("", &[]).await
    }

    /// The pending entries of one call.
    pub(crate) async fn pending_of(&self, trace_id: &str) -> Result<Vec<Pending>, String> {
        self.queued(" WHERE trace_id = $1", &[trace_id.into()])
            .await
    }

    async fn queued(&self, filter: &str, params: &[Param]) -> Result<Vec<Pending>, String> {
        self.db
            .read(
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

    /// Every stored checkpoint, smallest first, each with the witness cosignatures stored
    /// for it appended to its note.
    pub(crate) async fn checkpoints(&self) -> Result<Vec<String>, String> {
        self.notes("").await
    }

    /// The largest checkpoint stored, with its cosignatures, if any.
    pub(crate) async fn latest_checkpoint(&self) -> Result<Option<String>, String> {
        Ok(self.notes(" DESC LIMIT 1").await?.pop())
    }

    /// The origin the stored checkpoints carry (the largest one's), if any is stored: the
    /// name every later checkpoint of this log must carry too.
    pub(crate) async fn stored_origin(&self) -> Result<Option<String>, String> {
        Ok(self
            .latest_checkpoint()
            .await?
            .and_then(|note| note.split('\n').next().map(str::to_owned)))
    }

    async fn notes(&self, order: &str) -> Result<Vec<String>, String> {
        let notes = format!("SELECT size, note FROM guard_audit_checkpoints ORDER BY size{order}");
        let mut read = self
            .db
            .read_all(&[
                (notes.as_str(), &[]),
                (
                    "SELECT size, signature FROM guard_audit_cosignatures ORDER BY size, at, signature",
                    &[],
                ),
            ])
            .await?;
        let cosignatures = read.pop().unwrap_or_default();
        let notes = read.pop().unwrap_or_default();
        notes
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
    pub(crate) async fn verify(
        &self,
        checkpoint: Option<&Checkpoint>,
    ) -> Result<Verified, VerifyError> {
        self.verify_against(checkpoint, &[]).await
    }

    /// [`verify`](Self::verify), with `older` checkpoints of the log (checked by the caller)
    /// to name a rewrite from the first record none of them vouches for.
    pub(crate) async fn verify_against(
        &self,
        checkpoint: Option<&Checkpoint>,
        older: &[Checkpoint],
    ) -> Result<Verified, VerifyError> {
        let rows = self
            .db
            .read(
                "SELECT seq, hash, entry, trace_id, tool, outcome, tenant, user_id, operation_id, at
                 FROM guard_audit_log ORDER BY seq",
                &[],
            )
            .await
            .map_err(VerifyError::Store)?
            .iter()
            .map(|row| {
                Ok(Row {
                    seq: row.int("seq")?,
                    hash: row.text("hash")?.to_owned(),
                    entry: row.text("entry")?.to_owned(),
                    trace_id: row.text("trace_id")?.to_owned(),
                    tool: row.text("tool")?.to_owned(),
                    outcome: row.text("outcome")?.to_owned(),
                    tenant: row.opt_text("tenant")?.map(str::to_owned),
                    user_id: row.opt_text("user_id")?.map(str::to_owned),
                    operation_id: row.opt_text("operation_id")?.map(str::to_owned),
                    at: row.int("at")?,
                })
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(VerifyError::Store)?;
        verify_rows(&rows, checkpoint, older).map_err(VerifyError::Fault)
    }
}
