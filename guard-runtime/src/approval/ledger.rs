//! The desk's rows in the operation store (`guard_approvals`, `guard_approval_links`,
//! `guard_approval_decisions`; their constraints are in `store::approvals`), statement by
//! statement. The desk decides; this module only reads and writes rows.
//!
//! Deadlines are compared with the database's clock ([`now`]), never a server process's:
//! replicas whose clocks disagree still agree on when an approval expired.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::state::{Role, Status};
use crate::{
    person::Person,
    store::{Dialect, Row, StoreError, Tx},
};

/// An approval as stored.
pub(super) struct Stored {
    pub id: String,
    pub tool: String,
    pub message: Option<String>,
    pub target: String,
    pub summary: String,
    pub requester: Person,
    pub trace_id: String,
    pub bound_sha256: String,
    /// The effect the approvers were shown (none on an approval stored before guard kept it).
    pub fingerprint: Option<String>,
    pub expected: Option<String>,
    pub secret_label: Option<String>,
    pub required: u8,
    pub created_at: i64,
    pub expires_at: i64,
    pub status: Status,
    pub typed: Option<String>,
}

/// A link as stored (its token only as the key it was found by).
pub(super) struct Link {
    pub approval: String,
    pub role: Role,
    pub csrf: String,
    pub viewed: bool,
    pub used: bool,
    /// What guard sealed it with when it issued it (none on a link it never issued).
    pub seal: Option<String>,
}

/// What a new approval stores.
pub(super) struct New<'a> {
    pub id: &'a str,
    pub tool: &'a str,
    pub message: Option<&'a str>,
    pub target: &'a str,
    pub summary: &'a str,
    pub requester: &'a Person,
    pub trace_id: &'a str,
    pub bound_sha256: &'a str,
    pub fingerprint: &'a str,
    /// The approvers it lists (canonical users of the requester's tenant), as a JSON array.
    pub approvers: &'a str,
    pub expected: Option<&'a str>,
    pub secret_label: Option<&'a str>,
    pub required: u8,
    pub created_at: i64,
    pub expires_at: i64,
}

/// The database's clock, in milliseconds since the Unix epoch.
pub(super) async fn now(tx: &mut Tx) -> Result<i64, StoreError> {
    let sql = match tx.dialect() {
        Dialect::Sqlite => {
            "SELECT CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS now"
        }
        Dialect::Postgres => "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now",
    };
    tx.query_opt(sql, &[])
        .await?
        .ok_or_else(|| StoreError::Column("the clock query returned no row".into()))?
        .int("now")
}

/// A time the store holds, as the system's.
pub(super) fn system_time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

pub(super) async fn insert(tx: &mut Tx, new: New<'_>) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO guard_approvals (approval_id, tool, message, target, summary, tenant,
             user_id, trace_id, bound_sha256, expected, secret_label, required, created_at,
             expires_at, fingerprint, approvers, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
             'PENDING')",
        &[
            new.id.into(),
            new.tool.into(),
            new.message.into(),
            new.target.into(),
            new.summary.into(),
            new.requester.tenant().into(),
            new.requester.user().into(),
            new.trace_id.into(),
            new.bound_sha256.into(),
            new.expected.into(),
            new.secret_label.into(),
            i64::from(new.required).into(),
            new.created_at.into(),
            new.expires_at.into(),
            new.fingerprint.into(),
            new.approvers.into(),
        ],
    )
    .await
    .map(drop)
}

/// A role as the store spells it.
pub(super) fn role_code(role: &Role) -> &'static str {
    match role {
        Role::Requester => "REQUESTER",
        Role::Approver(_) => "APPROVER",
    }
}

/// Stores the link whose token has the SHA-256 `key`, with its `seal`.
pub(super) async fn insert_link(
    tx: &mut Tx,
    key: &str,
    approval: &str,
    role: &Role,
    person: &Person,
    csrf: &str,
    seal: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO guard_approval_links
             (token_sha256, approval_id, role, tenant, user_id, csrf, seal)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            key.into(),
            approval.into(),
            role_code(role).into(),
            person.tenant().into(),
            person.user().into(),
            csrf.into(),
            seal.into(),
        ],
    )
    .await
    .map(drop)
}

/// The approval `id`; with `lock`, held until the transaction ends (PostgreSQL's row lock;
/// SQLite's transaction already holds the database).
pub(super) async fn approval(
    tx: &mut Tx,
    id: &str,
    lock: bool,
) -> Result<Option<Stored>, StoreError> {
    let lock = if lock && tx.dialect() == Dialect::Postgres {
        " FOR UPDATE"
    } else {
        ""
    };
    let sql = format!(
        "SELECT approval_id, tool, message, target, summary, tenant, user_id, trace_id,
                bound_sha256, fingerprint, expected, secret_label, required, created_at,
                expires_at, status, ended_by, typed
         FROM guard_approvals WHERE approval_id = $1{lock}"
    );
    tx.query_opt(&sql, &[id.into()])
        .await?
        .map(|row| stored(&row))
        .transpose()
}

fn stored(row: &Row) -> Result<Stored, StoreError> {
    let status = match row.text("status")? {
        "PENDING" => Status::Pending,
        "APPROVED" => Status::Approved,
        "REJECTED" => Status::Rejected {
            by: row.opt_text("ended_by")?.unwrap_or_default().to_owned(),
        },
        "EXPIRED" => Status::Expired,
        "WITHDRAWN" => Status::Withdrawn,
        other => {
            return Err(StoreError::Column(format!(
                "approval status {other:?} is not one guard writes"
            )));
        }
    };
    let text = |column: &str| row.text(column).map(str::to_owned);
    let opt = |column: &str| row.opt_text(column).map(|t| t.map(str::to_owned));
    Ok(Stored {
        id: text("approval_id")?,
        tool: text("tool")?,
        message: opt("message")?,
        target: text("target")?,
        summary: text("summary")?,
        requester: person(row.text("tenant")?, row.text("user_id")?)?,
        trace_id: text("trace_id")?,
        bound_sha256: text("bound_sha256")?,
        fingerprint: opt("fingerprint")?,
        expected: opt("expected")?,
        secret_label: opt("secret_label")?,
        required: u8::try_from(row.int("required")?)
            .map_err(|_| StoreError::Column("an approval's required count is not 1-255".into()))?,
        created_at: row.int("created_at")?,
        expires_at: row.int("expires_at")?,
        status,
        typed: opt("typed")?,
    })
}

fn person(tenant: &str, user: &str) -> Result<Person, StoreError> {
    Person::new(tenant, user)
        .map_err(|e| StoreError::Column(format!("a stored person is not canonical: {e}")))
}

/// The link whose token has the SHA-256 `key`.
pub(super) async fn link(tx: &mut Tx, key: &str) -> Result<Option<Link>, StoreError> {
    let Some(row) = tx
        .query_opt(
            "SELECT approval_id, role, tenant, user_id, csrf, viewed_at, used_at, seal
             FROM guard_approval_links WHERE token_sha256 = $1",
            &[key.into()],
        )
        .await?
    else {
        return Ok(None);
    };
    let role = match row.text("role")? {
        "REQUESTER" => Role::Requester,
        _ => Role::Approver(person(row.text("tenant")?, row.text("user_id")?)?),
    };
    Ok(Some(Link {
        approval: row.text("approval_id")?.to_owned(),
        role,
        csrf: row.text("csrf")?.to_owned(),
        viewed: row.opt_int("viewed_at")?.is_some(),
        used: row.opt_int("used_at")?.is_some(),
        seal: row.opt_text("seal")?.map(str::to_owned),
    }))
}

/// The approvals still waiting for `person` (by approval id, with the key of their link):
/// pending, before their deadline, through an approver link of theirs not used yet.
pub(super) async fn waiting_for(
    tx: &mut Tx,
    person: &Person,
    now: i64,
) -> Result<Vec<(String, String)>, StoreError> {
    tx.query(
        "SELECT l.approval_id, l.token_sha256
         FROM guard_approval_links l JOIN guard_approvals a ON a.approval_id = l.approval_id
         WHERE l.role = 'APPROVER' AND l.tenant = $1 AND l.user_id = $2 AND l.used_at IS NULL
           AND a.status = 'PENDING' AND a.expires_at > $3
         ORDER BY a.expires_at, a.approval_id",
        &[person.tenant().into(), person.user().into(), now.into()],
    )
    .await?
    .iter()
    .map(|row| {
        Ok((
            row.text("approval_id")?.to_owned(),
            row.text("token_sha256")?.to_owned(),
        ))
    })
    .collect()
}

/// The key of `person`'s approver link on approval `id`.
pub(super) async fn link_of(
    tx: &mut Tx,
    id: &str,
    person: &Person,
) -> Result<Option<String>, StoreError> {
    tx.query_opt(
        "SELECT token_sha256 FROM guard_approval_links
         WHERE approval_id = $1 AND role = 'APPROVER' AND tenant = $2 AND user_id = $3",
        &[id.into(), person.tenant().into(), person.user().into()],
    )
    .await?
    .map(|row| row.text("token_sha256").map(str::to_owned))
    .transpose()
}

/// Marks the link first viewed at `now`; false if it already was.
pub(super) async fn viewed(tx: &mut Tx, key: &str, now: i64) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "UPDATE guard_approval_links SET viewed_at = $2
             WHERE token_sha256 = $1 AND viewed_at IS NULL",
            &[key.into(), now.into()],
        )
        .await?;
    Ok(changed == 1)
}

/// Counts one more refused decision through the link, up to `limit`; false past it.
pub(super) async fn refused(tx: &mut Tx, key: &str, limit: i64) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "UPDATE guard_approval_links SET refusals = refusals + 1
             WHERE token_sha256 = $1 AND refusals < $2",
            &[key.into(), limit.into()],
        )
        .await?;
    Ok(changed == 1)
}

/// Records `who`'s decision (`APPROVE` or `REJECT`) through the link `key`, with its
/// `seal`, and uses up the link.
pub(super) async fn decision(
    tx: &mut Tx,
    key: &str,
    approval: &str,
    who: &Person,
    (decision, seal): (&str, &str),
    now: i64,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO guard_approval_decisions
             (approval_id, tenant, user_id, skeleton, decision, at, link_sha256, seal)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            approval.into(),
            who.tenant().into(),
            who.user().into(),
            who.skeleton().into(),
            decision.into(),
            now.into(),
            key.into(),
            seal.into(),
        ],
    )
    .await?;
    tx.execute(
        "UPDATE guard_approval_links SET used_at = $2 WHERE token_sha256 = $1",
        &[key.into(), now.into()],
    )
    .await
    .map(drop)
}

/// Ends a pending approval as `status`; false if it was not pending any more.
pub(super) async fn end(
    tx: &mut Tx,
    approval: &str,
    status: &Status,
    typed: Option<&str>,
    now: i64,
) -> Result<bool, StoreError> {
    let (code, by) = match status {
        Status::Pending => return Ok(false),
        Status::Approved => ("APPROVED", None),
        Status::Rejected { by } => ("REJECTED", Some(by.as_str())),
        Status::Expired => ("EXPIRED", None),
        Status::Withdrawn => ("WITHDRAWN", None),
    };
    let changed = tx
        .execute(
            "UPDATE guard_approvals SET status = $2, ended_by = $3, typed = $4, ended_at = $5
             WHERE approval_id = $1 AND status = 'PENDING'",
            &[
                approval.into(),
                code.into(),
                by.into(),
                typed.into(),
                now.into(),
            ],
        )
        .await?;
    Ok(changed == 1)
}

/// The newest approval `requester` opened for the binding `bound_sha256` that may still be
/// taken up: pending, or approved and not yet used, before its deadline by the database's
/// clock.
pub(super) async fn open_for(
    tx: &mut Tx,
    requester: &Person,
    bound_sha256: &str,
) -> Result<Option<String>, StoreError> {
    let now = now(tx).await?;
    let row = tx
        .query_opt(
            "SELECT a.approval_id FROM guard_approvals a
             WHERE a.tenant = $1 AND a.user_id = $2 AND a.bound_sha256 = $3
               AND a.status IN ('PENDING', 'APPROVED') AND a.expires_at > $4
               AND NOT EXISTS (SELECT 1 FROM guard_approval_uses u
                               WHERE u.approval_id = a.approval_id)
               AND NOT EXISTS (SELECT 1 FROM guard_approval_tasks t
                               WHERE t.approval_id = a.approval_id AND t.ended = 'cancelled')
             ORDER BY a.created_at DESC, a.approval_id LIMIT 1",
            &[
                requester.tenant().into(),
                requester.user().into(),
                bound_sha256.into(),
                now.into(),
            ],
        )
        .await?;
    row.map(|r| r.text("approval_id").map(str::to_owned))
        .transpose()
}

/// Whether the requester's link of approval `id` has the token whose SHA-256 is `key`.
pub(super) async fn is_requester_link(
    tx: &mut Tx,
    id: &str,
    key: &str,
) -> Result<bool, StoreError> {
    Ok(tx
        .query_opt(
            "SELECT 1 AS found FROM guard_approval_links
             WHERE token_sha256 = $1 AND approval_id = $2 AND role = 'REQUESTER'",
            &[key.into(), id.into()],
        )
        .await?
        .is_some())
}

/// Records that approval `id` let its effect run, for the call `trace_id`. The database
/// refuses a second use and the use of an approval that is not approved, both as a
/// constraint error ([`StoreError::is_constraint`]).
pub(super) async fn used(
    tx: &mut Tx,
    id: &str,
    trace_id: &str,
    now: i64,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO guard_approval_uses (approval_id, trace_id, at) VALUES ($1, $2, $3)",
        &[id.into(), trace_id.into(), now.into()],
    )
    .await
    .map(drop)
}

/// An approval's task as stored (`guard_approval_tasks`).
pub(super) struct TaskRow {
    /// The call's arguments, as canonical JSON.
    pub arguments: String,
    /// How the task ended (`completed` or `failed`) and its payload, once it did.
    pub ended: Option<(String, String)>,
}

/// Makes approval `id` a task running the call with `arguments`, unless it already is one.
pub(super) async fn insert_task(tx: &mut Tx, id: &str, arguments: &str) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO guard_approval_tasks (approval_id, arguments) VALUES ($1, $2)
         ON CONFLICT (approval_id) DO NOTHING",
        &[id.into(), arguments.into()],
    )
    .await
    .map(drop)
}

/// The task of approval `id`, if it is one.
pub(super) async fn task(tx: &mut Tx, id: &str) -> Result<Option<TaskRow>, StoreError> {
    let Some(row) = tx
        .query_opt(
            "SELECT arguments, ended, result FROM guard_approval_tasks
             WHERE approval_id = $1",
            &[id.into()],
        )
        .await?
    else {
        return Ok(None);
    };
    let ended = match (row.opt_text("ended")?, row.opt_text("result")?) {
        (Some(ended), Some(result)) => Some((ended.to_owned(), result.to_owned())),
        _ => None,
    };
    Ok(Some(TaskRow {
        arguments: row.text("arguments")?.to_owned(),
        ended,
    }))
}

/// Claims the run of task `id` for `runner` at `now`: false if it ended, or another runner
/// claimed it after `stale` (a claim older than that is taken over: its runner stopped).
pub(super) async fn claim_run(
    tx: &mut Tx,
    id: &str,
    runner: &str,
    now: i64,
    stale: i64,
) -> Result<bool, StoreError> {
    let changed = tx
        .execute(
            "UPDATE guard_approval_tasks SET runner = $2, run_at = $3
             WHERE approval_id = $1 AND result IS NULL AND (run_at IS NULL OR run_at <= $4)",
            &[id.into(), runner.into(), now.into(), stale.into()],
        )
        .await?;
    Ok(changed == 1)
}

/// Ends task `id` as `ended` (`completed`, `failed` or `cancelled`) with `result`; false if
/// it had already ended (the first ending stands). A cancellation also yields to a run
/// already claimed, which ends the task itself.
pub(super) async fn end_task(
    tx: &mut Tx,
    id: &str,
    ended: &str,
    result: &str,
) -> Result<bool, StoreError> {
    let sql = if ended == "cancelled" {
        "UPDATE guard_approval_tasks SET ended = $2, result = $3
         WHERE approval_id = $1 AND result IS NULL AND run_at IS NULL"
    } else {
        "UPDATE guard_approval_tasks SET ended = $2, result = $3
         WHERE approval_id = $1 AND result IS NULL"
    };
    let changed = tx
        .execute(sql, &[id.into(), ended.into(), result.into()])
        .await?;
    Ok(changed == 1)
}
