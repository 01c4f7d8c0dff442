//! The target lock: a prepare and a confirm of the same target (tenant, op, target) take
//! turns, so a prepare's check never reads the target while a confirm of it is changing it.
//!
//! On PostgreSQL it is a transaction-scoped advisory lock keyed by a hash of the three
//! names; it ends with the transaction. On SQLite, `BEGIN IMMEDIATE` already serialises
//! every transaction, so there is nothing more to take.

use sha2::{Digest, Sha256};

use super::sql::{Dialect, Statement, StoreError, Tx};

/// Holds `target` of `op` for `tenant` until `tx` ends, waiting for whoever holds it now.
/// Taking it again in the same transaction is free.
pub(crate) async fn lock(
    tx: &mut Tx,
    tenant: &str,
    op: &str,
    target: &str,
) -> Result<(), StoreError> {
    match statement(tx.dialect(), tenant, op, target) {
        Some(lock) => tx.pipeline(&[lock]).await.map(drop),
        None => Ok(()),
    }
}

/// The statement that takes the lock, to send with others; none on SQLite.
pub(crate) fn statement(
    dialect: Dialect,
    tenant: &str,
    op: &str,
    target: &str,
) -> Option<Statement> {
    match dialect {
        Dialect::Sqlite => None,
        Dialect::Postgres => Some(Statement::execute(
            "SELECT pg_advisory_xact_lock($1)",
            vec![key(tenant, op, target).into()],
        )),
    }
}

/// The advisory lock key: the first 8 bytes of SHA-256 over the length-prefixed names, so
/// no two different triples are spelled alike. A collision only makes two targets take turns.
fn key(tenant: &str, op: &str, target: &str) -> i64 {
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

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn keys_differ_by_every_name_and_by_where_the_names_split() {
        let base = key("t", "op", "1001");
        assert_eq!(base, key("t", "op", "1001"));
        assert_ne!(base, key("u", "op", "1001"));
        assert_ne!(base, key("t", "op2", "1001"));
        assert_ne!(base, key("t", "op", "1002"));
        assert_ne!(key("ab", "c", "d"), key("a", "bc", "d"));
    }
}
