//! The locks that make guard's writers take turns, each with a name. On PostgreSQL each is
//! a transaction-scoped advisory lock that ends with its transaction. On SQLite
//! `BEGIN IMMEDIATE` already holds the database's one write lock for the whole
//! transaction, so there is nothing more to take.

use sha2::{Digest, Sha256};

use super::{
    expiring::Expiring,
    sql::{Dialect, Statement, StoreError, Tx},
};

/// A lock guard takes, by what it protects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lock<'a> {
    /// Schema steps: two processes opening one old store migrate it once.
    Migrate,
    /// Audit log appends: an entry chains to the one before it, so the head must not move
    /// between reading it and writing after it.
    AuditAppend,
    /// A prepare and a confirm of one target (tenant, op, target): a prepare's check never
    /// reads the target while a confirm of it is changing it.
    Target {
        /// The caller's tenant.
        tenant: &'a str,
        /// The operation.
        op: &'a str,
        /// The target's name.
        target: &'a str,
    },
    /// One idempotency key, by the hex SHA-256 of its scope (tenant, user, tool, key): a
    /// second call with the key answers at once instead of waiting on the first one's row.
    Key(&'a str),
    /// A purge of one table's expired rows: one at a time, the others skip it.
    Purge(Expiring),
}

/// Fixed ids of the locks that protect one thing per store (any numbers no other lock
/// derives). On PostgreSQL every id is taken hashed with the store's schema (see
/// [`statement`]), so stores in other schemas of one database never take turns.
const MIGRATE: i64 = 7_237_150_514;
const AUDIT_APPEND: i64 = 7_237_150_515;
const PURGE_IDEMPOTENCY_KEYS: i64 = 7_237_150_516;
const PURGE_REDEEMED_STATES: i64 = 7_237_150_517;
#[cfg(feature = "approval")]
const PURGE_APPROVALS: i64 = 7_237_150_518;
const PURGE_BUDGETS: i64 = 7_237_150_519;

impl Lock<'_> {
    /// The advisory lock id.
    fn id(self) -> i64 {
        match self {
            Lock::Migrate => MIGRATE,
            Lock::AuditAppend => AUDIT_APPEND,
            Lock::Target { tenant, op, target } => target_id(tenant, op, target),
            Lock::Key(scoped) => key_id(scoped),
            Lock::Purge(Expiring::IdempotencyKeys) => PURGE_IDEMPOTENCY_KEYS,
            Lock::Purge(Expiring::RedeemedStates) => PURGE_REDEEMED_STATES,
            #[cfg(feature = "approval")]
            Lock::Purge(Expiring::Approvals) => PURGE_APPROVALS,
            Lock::Purge(Expiring::Budgets) => PURGE_BUDGETS,
        }
    }
}

/// The statement that waits for `lock`, to send with others; none on SQLite. Advisory
/// locks are database-wide, so the id is hashed with the schema the store's tables are in
/// (`hashtextextended(current_schema(), id)`, an empty name for none): another store in the same database (another
/// schema, another deployment, a test running beside) has locks of its own, and neither
/// waits on nor skips for the other's. Two stores whose ids collide only take turns.
pub(crate) fn statement(dialect: Dialect, lock: Lock<'_>) -> Option<Statement> {
    match dialect {
        Dialect::Sqlite => None,
        Dialect::Postgres => Some(Statement::execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(coalesce(current_schema(), ''), $1))",
            vec![lock.id().into()],
        )),
    }
}

/// The statement that takes `lock` if nobody holds it, answering `got` (1 when taken), to
/// send with others; none on SQLite. Scoped to the store's schema as [`statement`] is.
pub(crate) fn try_statement(dialect: Dialect, lock: Lock<'_>) -> Option<Statement> {
    match dialect {
        Dialect::Sqlite => None,
        Dialect::Postgres => Some(Statement::query(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(coalesce(current_schema(), ''), $1)) AS got",
            vec![lock.id().into()],
        )),
    }
}

/// Holds `lock` until `tx` ends, waiting for whoever holds it now. Taking it again in the
/// same transaction is free.
pub(crate) async fn hold(tx: &mut Tx, lock: Lock<'_>) -> Result<(), StoreError> {
    match statement(tx.dialect(), lock) {
        Some(statement) => tx.pipeline(&[statement]).await.map(drop),
        None => Ok(()),
    }
}

/// Takes `lock` until `tx` ends if nobody holds it, without waiting: `false` when another
/// transaction has it. Always `true` on SQLite, whose transaction already excludes others.
pub(crate) async fn try_hold(tx: &mut Tx, lock: Lock<'_>) -> Result<bool, StoreError> {
    let Some(statement) = try_statement(tx.dialect(), lock) else {
        return Ok(true);
    };
    let mut done = tx.pipeline(&[statement]).await?;
    let got = done
        .pop()
        .and_then(|d| d.rows.into_iter().next())
        .map(|row| row.int("got"))
        .transpose()?;
    Ok(got == Some(1))
}

/// A target's lock id: the first 8 bytes of SHA-256 over the length-prefixed names, so no
/// two different triples are spelled alike. A collision only makes two targets take turns.
fn target_id(tenant: &str, op: &str, target: &str) -> i64 {
    let mut hash = Sha256::new();
    for part in [tenant, op, target] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// A key's lock id: its scope hash's first 64 bits. A collision only makes two keys take
/// turns.
fn key_id(scoped: &str) -> i64 {
    let bits = u64::from_str_radix(scoped.get(..16).unwrap_or_default(), 16).unwrap_or_default();
    i64::from_ne_bytes(bits.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::{
        AUDIT_APPEND, Expiring, Lock, MIGRATE, PURGE_IDEMPOTENCY_KEYS, PURGE_REDEEMED_STATES,
        target_id,
    };

    #[test]
    fn target_ids_differ_by_every_name_and_by_where_the_names_split() {
        let base = target_id("t", "op", "1001");
        assert_eq!(base, target_id("t", "op", "1001"));
        assert_ne!(base, target_id("u", "op", "1001"));
        assert_ne!(base, target_id("t", "op2", "1001"));
        assert_ne!(base, target_id("t", "op", "1002"));
        assert_ne!(target_id("ab", "c", "d"), target_id("a", "bc", "d"));
    }

    #[test]
    fn the_fixed_locks_are_distinct_and_unchanged() {
        assert_eq!(Lock::Migrate.id(), MIGRATE);
        assert_eq!(Lock::AuditAppend.id(), AUDIT_APPEND);
        assert_eq!(
            Lock::Purge(Expiring::IdempotencyKeys).id(),
            PURGE_IDEMPOTENCY_KEYS
        );
        assert_eq!(
            Lock::Purge(Expiring::RedeemedStates).id(),
            PURGE_REDEEMED_STATES
        );
        let fixed = [
            MIGRATE,
            AUDIT_APPEND,
            PURGE_IDEMPOTENCY_KEYS,
            PURGE_REDEEMED_STATES,
        ];
        for (i, a) in fixed.iter().enumerate() {
            assert!(!fixed[i + 1..].contains(a), "lock id {a} is used twice");
        }
        assert_eq!(Lock::Key(&"f".repeat(64)).id(), -1);
    }
}
