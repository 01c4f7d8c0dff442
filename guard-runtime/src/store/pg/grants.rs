//! The grants a server's role needs on guard's tables, and nothing more: the role the server
//! connects as is assumed to be the attacker, so it gets no right guard does not use.

use super::names::identifier;
use crate::store::sql::StoreError;

/// The columns of `guard_operations` that guard updates. Every `UPDATE` guard issues on that
/// table (expiring, rejecting and submitting an intent) sets only these, so they are the only
/// ones the server's role needs `UPDATE` on.
pub const OPERATION_UPDATE_COLUMNS: &[&str] = &["status", "result", "confirmed_at"];

/// The grants a server's role needs on guard's tables in `schema`, and nothing more: run
/// them as the tables' owner after [`PgStore::migrate`](super::PgStore::migrate).
///
/// - `guard_operations`: `SELECT`, `INSERT`, and `UPDATE` of [`OPERATION_UPDATE_COLUMNS`]
///   only (which also lets guard lock an intent with `FOR UPDATE`);
/// - `guard_operation_effects`, `guard_audit_log`, `guard_audit_checkpoints` and
///   `guard_audit_cosignatures`: `SELECT` and `INSERT`, never `UPDATE`, `DELETE` or
///   `TRUNCATE`;
/// - `guard_audit_queue`: `SELECT`, `INSERT`, `DELETE` (a server's sequencer moves queued
///   entries into the log; a trigger refuses to delete one the log does not hold);
/// - `guard_rate_buckets`: `SELECT`, `INSERT`, and `UPDATE` of `tool` only (the bucket row is
///   locked with `FOR UPDATE`, which needs `UPDATE` on some column);
/// - `guard_rate_events` and `guard_redeemed_states`: `SELECT`, `INSERT`, `DELETE` (guard
///   prunes old rows);
/// - `guard_idempotency`: `SELECT`, `INSERT`, `DELETE` (expired keys are purged), and
///   `UPDATE` of `status`, `result` and `completed_at` only (which also lets the purge pass
///   over rows a running call holds with `FOR UPDATE SKIP LOCKED`);
/// - `guard_undo`: `SELECT`, `INSERT`, and `UPDATE` of `status`, `closed_at` and `result`
///   only (which also lets an undo lock its window and a purge claim one with
///   `FOR UPDATE SKIP LOCKED`); never `DELETE`;
/// - `guard_deferred`: `SELECT`, `INSERT`, and `UPDATE` of `status`, `closed_at` and
///   `result` only (which also lets a withdrawal lock its call and a runner claim one with
///   `FOR UPDATE SKIP LOCKED`); never `DELETE`;
/// - `guard_grants`: `SELECT`, `INSERT`, and `UPDATE` of `used`, `revoked_at` and
///   `revoked_by` only (which also lets a revocation lock its grant); never `DELETE`;
/// - `guard_budgets`: `SELECT`, `INSERT`, `DELETE` (ended periods are purged; a trigger
///   keeps an open one), and `UPDATE` of `opened_at`, `expires_at`, `items` and `bytes`
///   (a trigger lets them only grow within a period);
/// - `guard_approvals`: `SELECT`, `INSERT`, `DELETE` (ended approvals are purged), and
///   `UPDATE` of `status`, `ended_by`, `ended_at` and `typed` only;
/// - `guard_approval_links`: `SELECT`, `INSERT`, and `UPDATE` of `viewed_at`, `used_at` and
///   `refusals` only;
/// - `guard_approval_decisions`: `SELECT` and `INSERT`, never `UPDATE` or `DELETE` (a purged
///   approval takes its decisions with it);
/// - `guard_approval_uses`: `SELECT` and `INSERT` only (an approval lets its effect run once,
///   and a purged approval takes its use with it);
/// - `guard_approval_tasks`: `SELECT`, `INSERT`, and `UPDATE` of `runner`, `run_at`, `ended`
///   and `result` only (a purged approval takes its task with it);
/// - `guard_store_identity`: `SELECT` only (the store's id, which request states name).
///
/// Every table's rights are revoked from `role` first, so running it again over a role that
/// held more leaves it with exactly these.
pub fn operation_grants_sql(schema: &str, role: &str) -> Result<String, StoreError> {
    let schema = identifier("schema", schema)?;
    let role = identifier("role", role)?;
    let columns = OPERATION_UPDATE_COLUMNS.join(", ");
    Ok(format!(
        "GRANT USAGE ON SCHEMA {schema} TO {role};
         REVOKE ALL ON {schema}.guard_operations, {schema}.guard_operation_effects,
             {schema}.guard_rate_buckets, {schema}.guard_rate_events,
             {schema}.guard_redeemed_states, {schema}.guard_idempotency,
             {schema}.guard_audit_log, {schema}.guard_audit_checkpoints,
             {schema}.guard_audit_cosignatures, {schema}.guard_undo, {schema}.guard_approvals,
             {schema}.guard_approval_links, {schema}.guard_approval_decisions,
             {schema}.guard_approval_uses, {schema}.guard_approval_tasks,
             {schema}.guard_audit_queue, {schema}.guard_deferred, {schema}.guard_grants,
             {schema}.guard_store_identity, {schema}.guard_budgets FROM {role};
         GRANT SELECT, INSERT ON {schema}.guard_operations TO {role};
         GRANT UPDATE ({columns}) ON {schema}.guard_operations TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_operation_effects TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_rate_buckets TO {role};
         GRANT UPDATE (tool) ON {schema}.guard_rate_buckets TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_rate_events TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_redeemed_states TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_idempotency TO {role};
         GRANT UPDATE (status, result, completed_at) ON {schema}.guard_idempotency TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_audit_log TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_audit_checkpoints TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_audit_cosignatures TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_undo TO {role};
         GRANT UPDATE (status, closed_at, result) ON {schema}.guard_undo TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_deferred TO {role};
         GRANT UPDATE (status, closed_at, result) ON {schema}.guard_deferred TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_grants TO {role};
         GRANT UPDATE (used, revoked_at, revoked_by) ON {schema}.guard_grants TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_budgets TO {role};
         GRANT UPDATE (opened_at, expires_at, items, bytes) ON {schema}.guard_budgets TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_approvals TO {role};
         GRANT UPDATE (status, ended_by, ended_at, typed) ON {schema}.guard_approvals TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_links TO {role};
         GRANT UPDATE (viewed_at, used_at, refusals) ON {schema}.guard_approval_links TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_decisions TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_uses TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_tasks TO {role};
         GRANT UPDATE (runner, run_at, ended, result) ON {schema}.guard_approval_tasks TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_audit_queue TO {role};
         GRANT SELECT ON {schema}.guard_store_identity TO {role};"
    ))
}

#[cfg(test)]
mod tests {
    use super::operation_grants_sql;

    #[test]
    fn grants_update_of_three_columns_only() {
        let sql = operation_grants_sql("shop", "shop_app").unwrap();
        assert!(
            sql.contains("GRANT UPDATE (status, result, confirmed_at) ON shop.guard_operations")
        );
        assert!(!sql.contains("UPDATE ON shop.guard_operations"));
        assert!(!sql.contains("DELETE ON shop.guard_audit_log"));
        assert!(!sql.contains("DELETE ON shop.guard_operation_effects"));
        assert!(operation_grants_sql("shop", "app; DROP").is_err());
    }
}
