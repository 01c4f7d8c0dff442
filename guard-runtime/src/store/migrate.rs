//! Guard's own tables carry a schema version (`guard_schema_version`, one row), and a store
//! opening them applies the steps it is missing, in order, inside one locked transaction: a
//! store written by an older guard is brought forward, one written by a newer guard is
//! refused rather than misread. A later change to guard's tables is a new step at the end,
//! never an edit of an earlier one.

use serde_json::Value;

use super::{
    lock::{self, Lock},
    schema::TABLES,
    sql::{BoxFuture, Dialect, StoreError, Tx},
};
use crate::canonical::canonical_payload;

/// How a step changes a store, inside the migrating transaction.
pub(crate) type Apply = for<'a> fn(&'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>>;

/// One step from the version before it. The module whose tables a step changes registers it
/// (the list is `crate::schema::STEPS`); this module only applies them in order.
#[derive(Clone, Copy)]
pub(crate) struct Step {
    /// What the step does, for messages and tests.
    pub name: &'static str,
    /// The change.
    pub apply: Apply,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Step {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

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

/// Brings the store `tx` is on to the last of `steps`, inside `tx`. Migrators take turns on
/// [`Lock::Migrate`], so two processes opening one old store migrate it once; the caller
/// commits.
pub(crate) async fn run(tx: &mut Tx, steps: &[Step]) -> Result<(), StoreError> {
    lock::hold(tx, Lock::Migrate).await?;
    tx.batch(VERSION_TABLE).await?;
    let found = match tx.query_opt(READ_VERSION, &[]).await? {
        Some(row) => row.int("version")?,
        None => 0,
    };
    let pending = pending(found, steps)?;
    if pending.is_empty() {
        return Ok(());
    }
    for step in pending {
        (step.apply)(tx).await?;
    }
    tx.execute(WRITE_VERSION, &[version(steps).into()]).await?;
    Ok(())
}

/// Refuses a store this build may not use as it stands, without changing it: a database
/// without guard's log (`guard_audit_log`), one at another schema version than the last
/// of `steps` (older or newer), and one that still holds a table of `retired` that a step
/// would fold in. Readers (the verifier) open stores with this instead of [`run`]: they
/// never migrate, so what they report is what the store holds.
pub(crate) async fn check(tx: &mut Tx, steps: &[Step], retired: &[&str]) -> Result<(), StoreError> {
    let tables = tables_named(tx).await?;
    let has = |name: &str| tables.iter().any(|t| t == name);
    if !has("guard_audit_log") {
        return Err(StoreError::Other(
            "this database holds no guard audit log (no guard_audit_log table): it is not a \
             guard operation store; give the store the server writes (its SQLite file or \
             PostgreSQL database and schema)"
                .into(),
        ));
    }
    let found = if has("guard_schema_version") {
        match tx.query_opt(READ_VERSION, &[]).await? {
            Some(row) => row.int("version")?,
            None => 0,
        }
    } else {
        0
    };
    let current = version(steps);
    if found > current || found < 0 {
        pending(found, steps)?;
    }
    if found < current {
        return Err(StoreError::Other(format!(
            "guard's tables are at schema version {found}, older than this build's \
             (version {current}); this tool never migrates a store: verify it with the guard \
             release that wrote it, or let this release's server open it (which brings it \
             forward) and verify then"
        )));
    }
    if let Some(table) = retired.iter().find(|t| has(t)) {
        return Err(StoreError::Other(format!(
            "the store holds `{table}`, a table guard's migration folds into the audit log, \
             at schema version {current}, after that migration ran: it was created since, \
             outside guard; its rows are not in the verified log. Inspect it by hand (this \
             tool never migrates or drops it)"
        )));
    }
    Ok(())
}

/// The names of the tables in the store's schema (SQLite's `main`, PostgreSQL's
/// `current_schema()`), from the engine's catalog.
async fn tables_named(tx: &mut Tx) -> Result<Vec<String>, StoreError> {
    let sql = match tx.dialect() {
        Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table'",
        Dialect::Postgres => {
            "SELECT tablename AS name FROM pg_catalog.pg_tables \
             WHERE schemaname = current_schema()"
        }
    };
    tx.query(sql, &[])
        .await?
        .iter()
        .map(|row| row.text("name").map(str::to_owned))
        .collect()
}

/// The version a store is at after `steps`.
pub(crate) fn version(steps: &[Step]) -> i64 {
    i64::try_from(steps.len()).unwrap_or(i64::MAX)
}

/// The steps a store at version `found` still needs.
pub(crate) fn pending(found: i64, steps: &[Step]) -> Result<&[Step], StoreError> {
    match usize::try_from(found) {
        Ok(found) if found <= steps.len() => Ok(&steps[found..]),
        _ => Err(StoreError::Other(format!(
            "guard's tables are at schema version {found}, newer than this build knows \
             (version {}); run the guard release that wrote them, or a newer one",
            version(steps)
        ))),
    }
}

/// The tables as guard created them before it versioned them (created only where missing,
/// so a store from then takes this step without change).
pub(crate) fn tables(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(tx.batch(TABLES))
}

/// Stored payloads re-encoded as RFC 8785 canonical JSON, with their digests.
pub(crate) fn canonical_payloads(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(async move {
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
        Ok(())
    })
}

/// An index on `guard_redeemed_states (expires_at)`, so the purge every redeemed MRTR state
/// runs reads only what expired.
pub(crate) fn redeemed_expiry(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(tx.batch(
        "CREATE INDEX IF NOT EXISTS guard_redeemed_states_expiry \
         ON guard_redeemed_states (expires_at)",
    ))
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
    fn payloads_are_re_encoded_only_when_they_change() {
        assert_eq!(recanonical(r#"{"a":1,"b":"x"}"#), None);
        let (text, digest) = recanonical(r#"{"b":2.50,"a":1.0}"#).unwrap();
        assert_eq!(text, r#"{"a":1,"b":2.5}"#);
        assert_eq!(digest, crate::canonical::sha256_hex(text.as_bytes()));
        assert_eq!(recanonical(r#"{"id":9007199254740993}"#), None);
    }
}
