//! The approvals step: `guard_approvals`, `guard_approval_links` and
//! `guard_approval_decisions`. Their rules are the ledger's ([`super::rules`]), created by
//! schema step 17.

use crate::store::{BoxFuture, StoreError, Tx};

/// The tables, the same on both engines.
const TABLES: &str = "CREATE TABLE IF NOT EXISTS guard_approvals (
        approval_id  TEXT PRIMARY KEY,
        tool         TEXT NOT NULL,
        message      TEXT,
        target       TEXT NOT NULL,
        summary      TEXT NOT NULL,
        tenant       TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        trace_id     TEXT NOT NULL,
        bound_sha256 TEXT NOT NULL,
        expected     TEXT,
        secret_label TEXT,
        required     INTEGER NOT NULL CHECK (required BETWEEN 1 AND 255),
        created_at   BIGINT NOT NULL,
        expires_at   BIGINT NOT NULL,
        status       TEXT NOT NULL
            CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'WITHDRAWN')),
        ended_by     TEXT,
        ended_at     BIGINT,
        typed        TEXT,
        CHECK (expires_at > created_at),
        CHECK ((status = 'PENDING') = (ended_at IS NULL)),
        CHECK ((status = 'REJECTED') = (ended_by IS NOT NULL))
    );
    CREATE INDEX IF NOT EXISTS guard_approvals_expiry ON guard_approvals (expires_at);
    CREATE INDEX IF NOT EXISTS guard_approvals_tenant ON guard_approvals (tenant, status);
    CREATE TABLE IF NOT EXISTS guard_approval_links (
        token_sha256 TEXT PRIMARY KEY,
        approval_id  TEXT NOT NULL REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        role         TEXT NOT NULL CHECK (role IN ('REQUESTER', 'APPROVER')),
        tenant       TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        csrf         TEXT NOT NULL,
        viewed_at    BIGINT,
        used_at      BIGINT,
        refusals     INTEGER NOT NULL DEFAULT 0 CHECK (refusals >= 0),
        UNIQUE (approval_id, tenant, user_id)
    );
    CREATE TABLE IF NOT EXISTS guard_approval_decisions (
        approval_id TEXT NOT NULL REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        tenant      TEXT NOT NULL,
        user_id     TEXT NOT NULL,
        skeleton    TEXT NOT NULL,
        decision    TEXT NOT NULL CHECK (decision IN ('APPROVE', 'REJECT')),
        at          BIGINT NOT NULL,
        PRIMARY KEY (approval_id, tenant, user_id),
        UNIQUE (approval_id, tenant, skeleton)
    )";

/// The schema step: the tables.
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(tx.batch(TABLES))
}
