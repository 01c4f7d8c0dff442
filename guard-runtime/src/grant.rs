//! Bounded grants: the human's "yes to this, and to up to N more like it for T minutes",
//! narrow, counted, short and recorded, in place of turning confirmations off.
//!
//! A tool declares `#[destructive(..., grant = "10m", grant_calls = 20)]` and its preview
//! states a scope in plain words ([`crate::preview::Preview::scope`]). The question then
//! offers "this call only" or "this and up to 20 more calls of the tool on the stated scope for 10
//! minutes"; on the second, guard opens a grant here with [`Grants`]: a server-generated
//! `grant_id`, the caller's tenant and user (canonical, as every owner in guard), the tool,
//! the scope, the form the human accepted (canonical JSON, reused as their answer), the
//! number of calls and an expiry. A later call of that tool by that person whose preview
//! states the same scope takes one use of the grant and runs without asking; its answer
//! says which grant covered it and what is left, and every use is an audit record naming
//! the grant, committed with the use.
//!
//! What the store enforces (the table `guard_grants` and its triggers): a grant opens
//! unused and unrevoked, counts one use at a time and never past its calls, is revoked
//! once, is never used once revoked, and never changes holder, tool, scope, answer, calls
//! or expiry. What the code enforces: a use is one `UPDATE` whose condition holds the
//! holder, tool, scope, expiry, revocation and count, so two processes racing for the last
//! use get it once; anyone else's grant is not found when revoked by its holder.
//!
//! What it never covers (refused at compile time): a `type_to_confirm` tool, a tool
//! approved on guard's page, a batch and a deferred tool. A grant is as trusted as the
//! store that keeps it: whoever can write guard's tables can open one.

pub(crate) mod table;

use std::{sync::Arc, time::Duration};

use serde_json::Value;

use crate::{
    audit::{AuditLog, Event},
    canonical::canonical_payload,
    outcome::Outcome,
    person::Person,
    store::ledger::Owner,
    store::{OperationStore, Row, Statement, StoreError, Tx},
};

/// One grant as its holder and the operator see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The server-generated id it is revoked by.
    pub grant_id: String,
    /// The tool it covers.
    pub tool: String,
    /// The scope it covers, as the preview stated it.
    pub scope: String,
    /// How many calls it covers beyond the one that opened it.
    pub calls: u32,
    /// How many it covered so far.
    pub used: u32,
    /// When it was opened (ms since the Unix epoch).
    pub created_at: i64,
    /// When it ends (ms since the Unix epoch).
    pub expires_at: i64,
    /// When it was revoked, and by whom, if it was.
    pub revoked: Option<(i64, String)>,
}

impl Grant {
    /// How many calls it still covers.
    pub fn left(&self) -> u32 {
        self.calls.saturating_sub(self.used)
    }

    /// Whether it covers a call at `now`: unrevoked, unexpired, with a call left.
    pub fn active_at(&self, now: i64) -> bool {
        self.revoked.is_none() && now < self.expires_at && self.left() > 0
    }

    /// What it is, in one sentence for the model's answer and the inbox.
    pub fn describe(&self) -> String {
        format!(
            "grant {} (up to {} calls of {} on {}, until {}; {} left)",
            self.grant_id,
            self.calls,
            self.tool,
            self.scope,
            crate::rfc3339::minute(self.expires_at),
            self.left()
        )
    }
}

/// A use of a grant taken for a call: the grant after the use, and the answer it reuses.
#[derive(Debug, Clone)]
pub(crate) struct Taken {
    pub grant: Grant,
    pub answer: Value,
}

/// Who revokes a grant.
#[derive(Debug, Clone, Copy)]
pub enum Revoker<'a> {
    /// The person who holds it (signed in on the approval page's inbox, or the caller):
    /// anyone else's grant is not found.
    Holder(&'a Person),
    /// The operator, by a name for the record (the `grants` command of a server).
    Operator(&'a str),
}

/// What became of a revocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    /// Revoked now: it covers no call from here on.
    Now(Grant),
    /// It was revoked before; nothing changed.
    Already(Grant),
    /// No grant of this holder has this id.
    NotFound,
}

/// The grants of one operation store, audited into its log.
#[derive(Clone)]
pub struct Grants {
    store: Arc<dyn OperationStore>,
    audit: AuditLog,
}

impl std::fmt::Debug for Grants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grants").finish_non_exhaustive()
    }
}

/// The columns every read of a grant takes.
const COLUMNS: &str =
    "grant_id, tool, scope, calls, used, created_at, expires_at, revoked_at, revoked_by, answer";

impl Grants {
    /// The grants in `store`, each step recorded in `audit` (the store's own log, so a
    /// record commits with the change it describes).
    pub fn new(store: Arc<dyn OperationStore>, audit: AuditLog) -> Self {
        Self { store, audit }
    }

    /// Opens a grant for `holder` over `tool` on `scope`, reusing `answer`, for
    /// `calls` calls until `within` from `now`. The grant and its `grant_opened`
    /// record commit together.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn open(
        &self,
        holder: &Person,
        tool: &str,
        scope: &str,
        answer: &Value,
        (calls, within): (u32, Duration),
        now: i64,
        trace_id: &str,
    ) -> Result<Grant, StoreError> {
        let (answer, digest) = canonical_payload(answer)
            .map_err(|e| StoreError::Other(format!("the answer has no canonical JSON: {e}")))?;
        let within = i64::try_from(within.as_millis()).unwrap_or(i64::MAX);
        let grant = Grant {
            grant_id: format!("g-{}", uuid::Uuid::new_v4()),
            tool: tool.to_owned(),
            scope: scope.to_owned(),
            calls,
            used: 0,
            created_at: now,
            expires_at: now.saturating_add(within.max(1)),
            revoked: None,
        };
        let insert = Statement::execute(
            "INSERT INTO guard_grants (grant_id, tenant, user_id, tool, scope, answer, calls,
                 used, created_at, expires_at, trace_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $9, $10)",
            vec![
                grant.grant_id.as_str().into(),
                holder.tenant().into(),
                holder.user().into(),
                tool.into(),
                scope.into(),
                answer.into(),
                i64::from(calls).into(),
                now.into(),
                grant.expires_at.into(),
                trace_id.into(),
            ],
        );
        let record = Event::new(tool, Outcome::GrantOpened, trace_id)
            .identity(holder.tenant(), holder.user())
            .field("grant_id", grant.grant_id.as_str())
            .field("scope", scope)
            .field("calls", calls)
            .field("grant_until", crate::rfc3339::utc(grant.expires_at))
            .field("answer_sha256", digest);
        let tx = self.store.begin().await?;
        self.commit(tx, vec![insert], &record).await?;
        Ok(grant)
    }

    /// Takes one use of a grant `holder` holds over `tool` on exactly `scope` at `now`, the
    /// one that ends first, with its `grant_used` record in the same commit; `None` when no
    /// grant covers the call. The use is one `UPDATE` whose condition holds every bound, so
    /// racing calls take the last use once.
    pub(crate) async fn take(
        &self,
        holder: &Person,
        tool: &str,
        scope: &str,
        now: i64,
        trace_id: &str,
    ) -> Result<Option<Taken>, StoreError> {
        const BOUNDS: &str = "tenant = $1 AND user_id = $2 AND tool = $3 AND scope = $4
                 AND revoked_at IS NULL AND used < calls AND expires_at > $5";
        let bounds = [
            holder.tenant().into(),
            holder.user().into(),
            tool.into(),
            scope.into(),
            now.into(),
        ];
        // Most calls have no grant: a look outside the writers' turn says so without
        // waiting behind their commits. A grant it misses (opened this instant) only means
        // the human is asked; one it sees is taken under the lock below, bounds checked again.
        let any = format!("SELECT 1 AS found FROM guard_grants WHERE {BOUNDS} LIMIT 1");
        if self.store.peek(&any, &bounds).await?.is_empty() {
            return Ok(None);
        }
        let sql = format!(
            "UPDATE guard_grants SET used = used + 1
             WHERE {BOUNDS} AND grant_id = (SELECT grant_id FROM guard_grants WHERE {BOUNDS}
                 ORDER BY expires_at, grant_id LIMIT 1)
             RETURNING {COLUMNS}"
        );
        let mut tx = self.store.begin().await?;
        let row = tx.query_opt(&sql, &bounds).await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Ok(None);
        };
        let (grant, answer) = read(&row)?;
        let answer = serde_json::from_str(&answer).map_err(|e| {
            StoreError::Other(format!(
                "guard_grants holds an answer that is not JSON: {e}"
            ))
        })?;
        let record = Event::new(tool, Outcome::GrantUsed, trace_id)
            .identity(holder.tenant(), holder.user())
            .field("grant_id", grant.grant_id.as_str())
            .field("scope", scope)
            .field("calls_left", grant.left());
        self.commit(tx, Vec::new(), &record).await?;
        Ok(Some(Taken { grant, answer }))
    }

    /// `holder`'s grants, the ones that still cover calls at `now` first, then the ended
    /// ones, newest first within each; at most `limit`.
    pub async fn held_by(
        &self,
        holder: &Person,
        now: i64,
        limit: u32,
    ) -> Result<Vec<Grant>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM guard_grants WHERE tenant = $1 AND user_id = $2
             ORDER BY created_at DESC, grant_id LIMIT $3"
        );
        let mut tx = self.store.begin().await?;
        let rows = tx
            .query(
                &sql,
                &[
                    holder.tenant().into(),
                    holder.user().into(),
                    i64::from(limit).into(),
                ],
            )
            .await?;
        tx.rollback().await?;
        let mut grants = rows
            .iter()
            .map(|row| read(row).map(|(grant, _)| grant))
            .collect::<Result<Vec<_>, _>>()?;
        grants.sort_by_key(|g| !g.active_at(now));
        Ok(grants)
    }

    /// Every grant that covers calls at `now`, whoever holds it, as `(tenant, user, grant)`:
    /// the operator's view.
    pub async fn active(&self, now: i64) -> Result<Vec<(String, String, Grant)>, StoreError> {
        let sql = format!(
            "SELECT tenant, user_id, {COLUMNS} FROM guard_grants
             WHERE revoked_at IS NULL AND used < calls AND expires_at > $1
             ORDER BY created_at, grant_id"
        );
        let mut tx = self.store.begin().await?;
        let rows = tx.query(&sql, &[now.into()]).await?;
        tx.rollback().await?;
        rows.iter()
            .map(|row| {
                let (grant, _) = read(row)?;
                Ok((
                    row.text("tenant")?.to_owned(),
                    row.text("user_id")?.to_owned(),
                    grant,
                ))
            })
            .collect()
    }

    /// Revokes grant `grant_id` at `now` for `by`: from then on it covers no call, in this
    /// process or any other sharing the store. The revocation and its `grant_revoked`
    /// record commit together; a grant revoked before is answered as it was.
    pub async fn revoke(
        &self,
        grant_id: &str,
        by: Revoker<'_>,
        now: i64,
        trace_id: &str,
    ) -> Result<Revoked, StoreError> {
        let mut tx = self.store.begin().await?;
        let lock = match tx.dialect() {
            crate::store::Dialect::Postgres => " FOR UPDATE",
            crate::store::Dialect::Sqlite => "",
        };
        let sql = format!(
            "SELECT tenant, user_id, {COLUMNS} FROM guard_grants WHERE grant_id = $1{lock}"
        );
        let Some(row) = tx.query_opt(&sql, &[grant_id.into()]).await? else {
            tx.rollback().await?;
            return Ok(Revoked::NotFound);
        };
        let owner = Owner::from_row(&row)?;
        let (mut grant, _) = read(&row)?;
        let name = match by {
            Revoker::Holder(person) if !owner.is(person) => {
                tx.rollback().await?;
                return Ok(Revoked::NotFound);
            }
            Revoker::Holder(person) => format!("{}/{}", person.tenant(), person.user()),
            Revoker::Operator(name) => format!("operator {name}"),
        };
        if grant.revoked.is_some() {
            tx.rollback().await?;
            return Ok(Revoked::Already(grant));
        }
        let revoke = Statement::execute(
            "UPDATE guard_grants SET revoked_at = $2, revoked_by = $3
             WHERE grant_id = $1 AND revoked_at IS NULL",
            vec![grant_id.into(), now.into(), name.as_str().into()],
        );
        let record = Event::new(grant.tool.as_str(), Outcome::GrantRevoked, trace_id)
            .identity(&owner.tenant, &owner.user)
            .field("grant_id", grant_id)
            .field("scope", grant.scope.as_str())
            .field("used", grant.used)
            .field("revoked_by", name.as_str());
        self.commit(tx, vec![revoke], &record).await?;
        grant.revoked = Some((now, name));
        Ok(Revoked::Now(grant))
    }

    /// Runs `last`, writes `record` and commits, all in `tx`.
    async fn commit(&self, tx: Tx, last: Vec<Statement>, record: &Event) -> Result<(), StoreError> {
        record.mirror();
        self.audit.commit_with(tx, last, record, None).await
    }
}

/// A grant and its stored answer, from a row with [`COLUMNS`].
fn read(row: &Row) -> Result<(Grant, String), StoreError> {
    let count = |column: &str| -> Result<u32, StoreError> {
        u32::try_from(row.int(column)?)
            .map_err(|_| StoreError::Other(format!("guard_grants holds a negative {column}")))
    };
    let revoked = match (row.opt_int("revoked_at")?, row.opt_text("revoked_by")?) {
        (Some(at), Some(by)) => Some((at, by.to_owned())),
        _ => None,
    };
    Ok((
        Grant {
            grant_id: row.text("grant_id")?.to_owned(),
            tool: row.text("tool")?.to_owned(),
            scope: row.text("scope")?.to_owned(),
            calls: count("calls")?,
            used: count("used")?,
            created_at: row.int("created_at")?,
            expires_at: row.int("expires_at")?,
            revoked,
        },
        row.text("answer")?.to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use serde_json::json;

    use super::{Grant, Grants, Revoked, Revoker};
    use crate::{audit::AuditLog, person::Person, store::OperationStore};

    /// Grants over a fresh SQLite store, and that store.
    fn grants() -> (Grants, Arc<dyn OperationStore>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn OperationStore> =
            Arc::new(crate::store::SqliteStore::open(dir.path().join("guard.db")).unwrap());
        let grants = Grants::new(store.clone(), AuditLog::shared(store.clone(), "test"));
        (grants, store, dir)
    }

    fn alice() -> Person {
        Person::new("acme", "alice").unwrap()
    }

    #[tokio::test]
    async fn a_grant_covers_its_holder_tool_and_scope_for_its_count_and_time() {
        let (grants, _store, _dir) = grants();
        let answer = json!({"confirm": true});
        let opened = grants
            .open(
                &alice(),
                "rm",
                "logs/",
                &answer,
                (2, Duration::from_secs(60)),
                1_000,
                "t0",
            )
            .await
            .unwrap();
        let bob = Person::new("acme", "bob").unwrap();
        let alice_elsewhere = Person::new("other-tenant", "alice").unwrap();
        for (who, tool, scope, at) in [
            (&bob, "rm", "logs/", 1_001),
            (&alice_elsewhere, "rm", "logs/", 1_001),
            (&alice(), "mv", "logs/", 1_001),
            (&alice(), "rm", "logs/old/", 1_001),
            (&alice(), "rm", "logs", 1_001),
            (&alice(), "rm", "logs/", opened.expires_at),
        ] {
            let taken = grants.take(who, tool, scope, at, "t").await.unwrap();
            assert!(taken.is_none(), "{who:?} {tool} {scope} at {at}");
        }
        let first = grants
            .take(&alice(), "rm", "logs/", 1_001, "t1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.grant.left(), 1);
        assert_eq!(first.answer, answer, "the human's answer is reused");
        grants
            .take(&alice(), "rm", "logs/", 1_002, "t2")
            .await
            .unwrap()
            .unwrap();
        assert!(
            grants
                .take(&alice(), "rm", "logs/", 1_003, "t3")
                .await
                .unwrap()
                .is_none(),
            "used up"
        );
        let listed = grants.held_by(&alice(), 1_003, 10).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].used, 2);
        assert!(grants.held_by(&bob, 1_003, 10).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_revoked_grant_covers_nothing_and_only_its_holder_or_the_operator_revokes() {
        let (grants, _store, _dir) = grants();
        let opened = grants
            .open(
                &alice(),
                "rm",
                "logs/",
                &json!({}),
                (5, Duration::from_secs(60)),
                1_000,
                "t0",
            )
            .await
            .unwrap();
        let bob = Person::new("acme", "bob").unwrap();
        assert_eq!(
            grants
                .revoke(&opened.grant_id, Revoker::Holder(&bob), 1_001, "t")
                .await
                .unwrap(),
            Revoked::NotFound
        );
        let Revoked::Now(revoked) = grants
            .revoke(&opened.grant_id, Revoker::Operator("ops"), 1_002, "t")
            .await
            .unwrap()
        else {
            panic!("revoked");
        };
        assert_eq!(revoked.revoked, Some((1_002, "operator ops".into())));
        assert!(
            grants
                .take(&alice(), "rm", "logs/", 1_003, "t")
                .await
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            grants
                .revoke(&opened.grant_id, Revoker::Holder(&alice()), 1_004, "t")
                .await
                .unwrap(),
            Revoked::Already(_)
        ));
    }

    #[tokio::test]
    async fn the_database_refuses_what_the_code_never_does() {
        let (grants, store, _dir) = grants();
        let opened = grants
            .open(
                &alice(),
                "rm",
                "logs/",
                &json!({}),
                (5, Duration::from_secs(60)),
                1_000,
                "t0",
            )
            .await
            .unwrap();
        let id = opened.grant_id.as_str();
        grants
            .take(&alice(), "rm", "logs/", 1_001, "t1")
            .await
            .unwrap()
            .unwrap();
        for (sql, why) in [
            (
                "UPDATE guard_grants SET used = used + 2 WHERE grant_id = $1",
                "two uses at once",
            ),
            (
                "UPDATE guard_grants SET used = 0 WHERE grant_id = $1",
                "a use given back",
            ),
            (
                "UPDATE guard_grants SET scope = 'everything' WHERE grant_id = $1",
                "a wider scope",
            ),
            (
                "UPDATE guard_grants SET calls = 100 WHERE grant_id = $1",
                "more calls",
            ),
            (
                "UPDATE guard_grants SET expires_at = expires_at + 1 WHERE grant_id = $1",
                "later",
            ),
            (
                "UPDATE guard_grants SET user_id = 'bob' WHERE grant_id = $1",
                "another holder",
            ),
            (
                "DELETE FROM guard_grants WHERE grant_id = $1",
                "history erased",
            ),
        ] {
            let mut tx = store.begin().await.unwrap();
            assert!(tx.execute(sql, &[id.into()]).await.is_err(), "{why}");
            tx.rollback().await.unwrap();
        }
        grants
            .revoke(id, Revoker::Operator("ops"), 1_001, "t")
            .await
            .unwrap();
        for (sql, why) in [
            (
                "UPDATE guard_grants SET used = used + 1 WHERE grant_id = $1",
                "a use after revocation",
            ),
            (
                "UPDATE guard_grants SET revoked_at = NULL, revoked_by = NULL WHERE grant_id = $1",
                "unrevoked",
            ),
        ] {
            let mut tx = store.begin().await.unwrap();
            assert!(tx.execute(sql, &[id.into()]).await.is_err(), "{why}");
            tx.rollback().await.unwrap();
        }
    }

    #[test]
    fn a_grant_is_active_while_unrevoked_unexpired_and_not_used_up() {
        let grant = Grant {
            grant_id: "g".into(),
            tool: "t".into(),
            scope: "s".into(),
            calls: 2,
            used: 1,
            created_at: 0,
            expires_at: 100,
            revoked: None,
        };
        assert!(grant.active_at(99));
        assert!(!grant.active_at(100), "expired at its deadline");
        assert!(
            !Grant {
                used: 2,
                ..grant.clone()
            }
            .active_at(1),
            "used up"
        );
        assert!(
            !Grant {
                revoked: Some((5, "x".into())),
                ..grant
            }
            .active_at(1),
            "revoked"
        );
    }
}
