//! Guard's own tables carry a schema version (`guard_schema_version`, one row), and a store
//! opening them applies the steps it is missing, in order, inside one locked transaction: a
//! store written by an older guard is brought forward, one written by a newer guard is
//! refused rather than misread. A later change to guard's tables is a new step at the end,
//! never an edit of an earlier one.

use serde_json::Value;

use super::{
    lock::{self, Lock},
    sql::{StoreError, Tx},
};
use crate::canonical::canonical_payload;

/// One step from the version before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Version 1: the tables as guard created them before it versioned them (created only
    /// where missing, so a store from then takes this step without change).
    Tables,
    /// Version 2: stored payloads re-encoded as RFC 8785 canonical JSON, with their digests.
    CanonicalPayloads,
    /// Version 3: the rows of the audit table from before the audit log (`guard_audit`), if
    /// the store has one, appended to the log in their order; the old table dropped.
    LegacyAudit,
    /// Version 4: an index on `guard_redeemed_states (expires_at)`, so the purge every
    /// redeemed MRTR state runs reads only what expired.
    RedeemedExpiry,
}

/// Every step, in order: step `i` brings a store to version `i + 1`.
const STEPS: [Step; 4] = [
    Step::Tables,
    Step::CanonicalPayloads,
    Step::LegacyAudit,
    Step::RedeemedExpiry,
];

/// The version this build writes.
pub(crate) const CURRENT: i64 = STEPS.len() as i64;

/// The version table. A single row (`id = 1`) holds the store's version.
pub(crate) const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_schema_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
)";

/// Reads the version row; no row is a store from before versioning (or a new one).
pub(crate) const READ_VERSION: &str = "SELECT version FROM guard_schema_version WHERE id = 1";

/// Records `$1` as the store's version.
pub(crate) const WRITE_VERSION: &str =
    "INSERT INTO guard_schema_version (id, version) VALUES (1, $1)
    ON CONFLICT (id) DO UPDATE SET version = excluded.version";

/// Brings the store `tx` is on to [`CURRENT`], inside `tx`: `tables` is the backend's
/// schema (step 1). Migrators take turns on [`Lock::Migrate`], so two processes opening one
/// old store migrate it once; the caller commits.
pub(crate) async fn run(tx: &mut Tx, tables: &str) -> Result<(), StoreError> {
    lock::hold(tx, Lock::Migrate).await?;
    tx.batch(VERSION_TABLE).await?;
    let found = match tx.query_opt(READ_VERSION, &[]).await? {
        Some(row) => row.int("version")?,
        None => 0,
    };
    let steps = pending(found)?;
    if steps.is_empty() {
        return Ok(());
    }
    for step in steps {
        match step {
            Step::Tables => tx.batch(tables).await?,
            Step::CanonicalPayloads => {
                let stored = tx
                    .query("SELECT operation_id, payload FROM guard_operations", &[])
                    .await?;
                for row in stored {
                    if let Some((text, digest)) = recanonical(row.text("payload")?) {
                        tx.execute(
                            "UPDATE guard_operations SET payload = $1, payload_sha256 = $2 \
                             WHERE operation_id = $3",
                            &[text.into(), digest.into(), row.text("operation_id")?.into()],
                        )
                        .await?;
                    }
                }
            }
            Step::LegacyAudit => crate::audit::migrate_legacy(tx).await?,
            Step::RedeemedExpiry => {
                tx.batch(
                    "CREATE INDEX IF NOT EXISTS guard_redeemed_states_expiry \
                     ON guard_redeemed_states (expires_at)",
                )
                .await?
            }
        }
    }
    tx.execute(WRITE_VERSION, &[CURRENT.into()]).await?;
    Ok(())
}

/// The steps a store at version `found` still needs.
pub(crate) fn pending(found: i64) -> Result<&'static [Step], StoreError> {
    match usize::try_from(found) {
        Ok(found) if found <= STEPS.len() => Ok(&STEPS[found..]),
        _ => Err(StoreError::Other(format!(
            "guard's tables are at schema version {found}, newer than this build knows \
             (version {CURRENT}); run the guard release that wrote them, or a newer one"
        ))),
    }
}

/// A stored payload's canonical text and digest, when they differ from what is stored.
/// A payload with no canonical form (an integer beyond ±2^53 stored by an older guard) keeps
/// its text: its digest is still over exactly that text, so it stays confirmable.
pub(crate) fn recanonical(payload: &str) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(payload).ok()?;
    let (text, digest) = canonical_payload(&value).ok()?;
    (text != payload).then_some((text, digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_takes_only_the_steps_it_lacks() {
        assert_eq!(pending(0).unwrap(), STEPS);
        assert_eq!(
            pending(1).unwrap(),
            [
                Step::CanonicalPayloads,
                Step::LegacyAudit,
                Step::RedeemedExpiry
            ]
        );
        assert!(pending(CURRENT).unwrap().is_empty());
    }

    #[test]
    fn a_newer_store_is_refused() {
        for found in [CURRENT + 1, -1] {
            let error = pending(found).unwrap_err().to_string();
            assert!(error.contains("newer than this build"), "{error}");
        }
    }

    #[test]
    fn payloads_are_re_encoded_only_when_they_change() {
        assert_eq!(recanonical(r#"{"a":1,"b":"x"}"#), None);
        let (text, digest) = recanonical(r#"{"b":2.50,"a":1.0}"#).unwrap();
        assert_eq!(text, r#"{"a":1,"b":2.5}"#);
        assert_eq!(digest, crate::canonical::sha256_hex(text.as_bytes()));
        assert_eq!(recanonical(r#"{"id":9007199254740993}"#), None);
    }
}
