//! `checkpoint`, the one command that writes: under the log's lock (SQLite's write lock,
//! PostgreSQL's advisory lock the server's writers take), it places the entries still
//! queued on PostgreSQL as the server's sequencer would, signs the log as it then stands and
//! stores the checkpoint, then the witnesses' cosignatures beside it.

use rmcp_guard_log::{
    CheckpointSigner,
    canonical::hex,
    entry_hash,
    merkle::{Hash, root},
    parse_hex, placed,
};

use super::{Log, db::Param};

/// The id of the log's advisory lock on PostgreSQL, the one the server's appends and
/// sequencer take (hashed with the store's schema, as they hash it).
const AUDIT_APPEND: i64 = 7_237_150_515;

/// The most queued entries placed by one statement's answer.
const BATCH: i64 = 512;

impl Log {
    /// Signs the log as it stands (after placing what is queued) under `origin`, stores the
    /// checkpoint with the others and returns its text and the leaf hashes it signed. A
    /// checkpoint is refused when the stored ones carry another origin.
    pub(crate) async fn sign_checkpoint(
        &self,
        origin: &str,
        signer: &CheckpointSigner,
    ) -> Result<(String, Vec<Hash>), String> {
        if self.db.is_postgres() {
            self.db.batch("BEGIN").await?;
        } else {
            self.db.batch("BEGIN IMMEDIATE").await?;
        }
        match self.sign_locked(origin, signer).await {
            Ok(signed) => {
                self.db.batch("COMMIT").await?;
                Ok(signed)
            }
            Err(e) => {
                let _ = self.db.batch("ROLLBACK").await;
                Err(e)
            }
        }
    }

    async fn sign_locked(
        &self,
        origin: &str,
        signer: &CheckpointSigner,
    ) -> Result<(String, Vec<Hash>), String> {
        if self.db.is_postgres() {
            self.db
                .execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(coalesce(current_schema(), ''), $1))",
                    &[AUDIT_APPEND.into()],
                )
                .await?;
            while self.place_queued().await? == BATCH {}
        }
        let latest = self
            .db
            .query(
                "SELECT note FROM guard_audit_checkpoints ORDER BY size DESC LIMIT 1",
                &[],
            )
            .await?;
        if let Some(row) = latest.first() {
            let stored = row.text("note")?.split('\n').next().unwrap_or_default();
            if stored != origin {
                return Err(format!(
                    "this log's checkpoints are named `{stored}`, not `{origin}`: drop --origin (a log keeps one name, so its checkpoints extend each other)"
                ));
            }
        }
        let leaves = self
            .db
            .query("SELECT hash FROM guard_audit_log ORDER BY seq", &[])
            .await?
            .iter()
            .map(|row| {
                parse_hex(row.text("hash")?.as_bytes()).ok_or_else(|| {
                    "guard_audit_log.hash is not a SHA-256; run guard-audit verify to find the record".to_owned()
                })
            })
            .collect::<Result<Vec<Hash>, String>>()?;
        let text = signer.sign(origin, leaves.len() as u64, &root(&leaves));
        self.db
            .execute(
                "INSERT INTO guard_audit_checkpoints (size, note, at) VALUES ($1, $2, $3)
                 ON CONFLICT (size) DO NOTHING",
                &[
                    (leaves.len() as i64).into(),
                    text.as_str().into(),
                    now_ms().into(),
                ],
            )
            .await?;
        Ok((text, leaves))
    }

    /// Places up to [`BATCH`] queued entries after the log's head, as the server's sequencer
    /// does (each entry's place and chain hash in the order they are placed, its queue id
    /// beside it), and removes them from the queue; answers how many it placed. The caller
    /// holds the log's lock.
    async fn place_queued(&self) -> Result<i64, String> {
        let queued = self
            .db
            .query(
                "SELECT id, body, trace_id, tool, outcome, tenant, user_id, operation_id, at
                 FROM guard_audit_queue ORDER BY id LIMIT $1",
                &[BATCH.into()],
            )
            .await?;
        if queued.is_empty() {
            return Ok(0);
        }
        let last = self
            .db
            .query(
                "SELECT seq, hash FROM guard_audit_log ORDER BY seq DESC LIMIT 1",
                &[],
            )
            .await?;
        let (mut seq, mut prev) = match last.first() {
            None => (0, [0u8; 32]),
            Some(row) => {
                let hash = parse_hex(row.text("hash")?.as_bytes()).ok_or(
                    "the last audit record's hash is not a SHA-256; run guard-audit verify to find what changed",
                )?;
                (row.int("seq")? + 1, hash)
            }
        };
        for row in &queued {
            let id = row.int("id")?;
            let entry = placed(seq as u64, &prev, row.text("body")?);
            let leaf = entry_hash(entry.as_bytes());
            let params: Vec<Param> = vec![
                seq.into(),
                hex(&leaf).as_str().into(),
                entry.as_str().into(),
                row.text("trace_id")?.into(),
                row.text("tool")?.into(),
                row.text("outcome")?.into(),
                row.opt_text("tenant")?.into(),
                row.opt_text("user_id")?.into(),
                row.opt_text("operation_id")?.into(),
                row.int("at")?.into(),
                id.into(),
            ];
            self.db
                .execute(
                    "INSERT INTO guard_audit_log
                        (seq, hash, entry, trace_id, tool, outcome, tenant, user_id, operation_id,
                         at, queue_id)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                    &params,
                )
                .await?;
            self.db
                .execute("DELETE FROM guard_audit_queue WHERE id = $1", &[id.into()])
                .await?;
            seq += 1;
            prev = leaf;
        }
        Ok(queued.len() as i64)
    }

    /// Stores witness cosignature lines of the stored checkpoint of `size` (lines already
    /// checked against the witness's key; a repeated line is kept once).
    pub(crate) async fn add_cosignatures(&self, size: u64, lines: &[String]) -> Result<(), String> {
        self.db.batch("BEGIN").await?;
        for line in lines {
            let added = self
                .db
                .execute(
                    "INSERT INTO guard_audit_cosignatures (size, signature, at) VALUES ($1, $2, $3)
                     ON CONFLICT (size, signature) DO NOTHING",
                    &[(size as i64).into(), line.as_str().into(), now_ms().into()],
                )
                .await;
            if let Err(e) = added {
                let _ = self.db.batch("ROLLBACK").await;
                return Err(e);
            }
        }
        self.db.batch("COMMIT").await
    }
}

/// Now, in ms since the epoch: when a checkpoint or cosignature was stored.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
