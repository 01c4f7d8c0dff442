//! The take-over step: the effect the approvers were shown (`guard_approvals.fingerprint`,
//! fixed by the ledger's rules) and `guard_approval_uses`, so an approved approval lets its
//! effect run once.

use crate::store::{BoxFuture, StoreError, Tx};

/// What the take-over step adds, the same on both engines (with the index an approver's
/// inbox reads their links by).
const TAKE_OVER: &str = "ALTER TABLE guard_approvals ADD COLUMN fingerprint TEXT;
    CREATE INDEX IF NOT EXISTS guard_approvals_requester
        ON guard_approvals (tenant, user_id, bound_sha256, status);
    CREATE INDEX IF NOT EXISTS guard_approval_links_person
        ON guard_approval_links (tenant, user_id, role);
    CREATE TABLE IF NOT EXISTS guard_approval_uses (
        approval_id TEXT PRIMARY KEY REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        trace_id    TEXT NOT NULL,
        at          BIGINT NOT NULL
    )";

/// The take-over step: the fingerprint the approvers saw, and the uses of approvals.
pub(crate) fn take_over(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(tx.batch(TAKE_OVER))
}
