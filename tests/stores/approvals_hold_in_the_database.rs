//! The approval page's approvals, as the database keeps them: whatever a server process (or
//! a compromised one, or a replica whose clock is wrong) sends, the database itself refuses a
//! second decision by one person, a decision after the approval ended or after its deadline
//! by the database's clock, a status going back from a final state, an approval completed
//! without its approvals, and a link used twice. On SQLite and on PostgreSQL, where the
//! server's role also holds only the grants guard documents.

use crate::support::orders::fresh_schema;
use guard_tests::pg_url;
use rmcp_guard::ops::{OperationStore, PgStore, SqlValue, SqliteStore, StoreError, now_ms, pg};

const INSERT_APPROVAL: &str = "INSERT INTO guard_approvals (approval_id, tool, target, summary,
        tenant, user_id, trace_id, bound_sha256, required, created_at, expires_at, status,
        approvers)
    VALUES ($1, 'deploy', 'production', 'Deploy v2', 'acme', 'alice', 'trace', 'bound', $2, $3,
        $4, 'PENDING', $5)";

/// Whom the approvals here list (a look-alike of bob included: the database compares the
/// names it is given, and guard never lists two look-alikes).
const LISTED: [&str; 4] = ["bob", "b0b", "carol", "dave"];

/// A link as guard issues it: `<approval>-<user>`, with a seal (the database cannot check a
/// seal, only that there is one).
const ISSUE: &str = "INSERT INTO guard_approval_links
        (token_sha256, approval_id, role, tenant, user_id, csrf, seal)
    VALUES ($1 || '-' || $3, $1, $2, $4, $3, 'csrf', 'sealed')";

/// A decision through the person's own link.
const DECIDE: &str = "INSERT INTO guard_approval_decisions
        (approval_id, tenant, user_id, skeleton, decision, at, link_sha256, seal)
    VALUES ($1, 'acme', $2, $3, $4, $5, $1 || '-' || $2, 'sealed')";

const END: &str = "UPDATE guard_approvals SET status = $2, ended_at = $3, ended_by = $4
    WHERE approval_id = $1";

/// Runs one statement in a transaction of its own and commits it.
async fn run(
    store: &dyn OperationStore,
    sql: &str,
    params: &[SqlValue],
) -> Result<u64, StoreError> {
    let mut tx = store.begin().await?;
    match tx.execute(sql, params).await {
        Ok(n) => tx.commit().await.map(|()| n),
        Err(error) => {
            tx.rollback().await?;
            Err(error)
        }
    }
}

/// `sql` is refused by a constraint of the database (not a lost connection).
#[track_caller]
fn refused(result: Result<u64, StoreError>, what: &str) -> StoreError {
    match result {
        Ok(_) => panic!("the database allowed {what}"),
        Err(error) => {
            assert!(error.is_constraint(), "{what}: not a constraint: {error}");
            error
        }
    }
}

/// Opens approval `id` as guard does: pending, listing [`LISTED`] when it needs more than
/// one approval, with the requester's link and one for each listed approver.
async fn open(store: &dyn OperationStore, id: &str, required: i64, from: i64, until: i64) {
    let listed: &[&str] = if required > 1 { &LISTED } else { &[] };
    let approvers = serde_json::to_string(listed).unwrap();
    run(
        store,
        INSERT_APPROVAL,
        &[
            id.into(),
            required.into(),
            from.into(),
            until.into(),
            approvers.into(),
        ],
    )
    .await
    .expect("open an approval");
    issue(store, id, "REQUESTER", ("acme", "alice"))
        .await
        .expect("the requester's link");
    for user in listed {
        issue(store, id, "APPROVER", ("acme", user))
            .await
            .expect("an approver's link");
    }
}

/// Issues `role`'s link on approval `id` to `(tenant, user)`.
async fn issue(
    store: &dyn OperationStore,
    id: &str,
    role: &str,
    (tenant, user): (&str, &str),
) -> Result<u64, StoreError> {
    run(
        store,
        ISSUE,
        &[id.into(), role.into(), user.into(), tenant.into()],
    )
    .await
}

async fn decide(
    store: &dyn OperationStore,
    id: &str,
    (user, skeleton): (&str, &str),
    decision: &str,
    at: i64,
) -> Result<u64, StoreError> {
    run(
        store,
        DECIDE,
        &[
            id.into(),
            user.into(),
            skeleton.into(),
            decision.into(),
            at.into(),
        ],
    )
    .await
}

async fn end(
    store: &dyn OperationStore,
    id: &str,
    status: &str,
    by: Option<&str>,
) -> Result<u64, StoreError> {
    run(
        store,
        END,
        &[id.into(), status.into(), now_ms().into(), by.into()],
    )
    .await
}

/// Marks approval `id` used: its effect runs.
async fn use_(store: &dyn OperationStore, id: &str) -> Result<u64, StoreError> {
    run(
        store,
        "INSERT INTO guard_approval_uses (approval_id, trace_id, at) VALUES ($1, 'trace', $2)",
        &[id.into(), now_ms().into()],
    )
    .await
}

async fn status(store: &dyn OperationStore, id: &str) -> String {
    let mut tx = store.begin().await.unwrap();
    let row = tx
        .query_opt(
            "SELECT status FROM guard_approvals WHERE approval_id = $1",
            &[id.into()],
        )
        .await
        .unwrap()
        .expect("the approval is stored");
    tx.rollback().await.unwrap();
    row.text("status").unwrap().to_owned()
}

const BOB: (&str, &str) = ("bob", "bob");
/// Another spelling could not reach the table (names are stored canonical), but a
/// look-alike can: `b0b` shares bob's confusable skeleton.
const BOB_LOOK_ALIKE: (&str, &str) = ("b0b", "bob");
const CAROL: (&str, &str) = ("carol", "carol");
const DAVE: (&str, &str) = ("dave", "dave");

async fn the_database_keeps_approvals_honest(store: &dyn OperationStore) {
    let now = now_ms();
    open(store, "a1", 2, now, now + 60_000).await;

    decide(store, "a1", BOB, "APPROVE", now).await.unwrap();
    let twice = refused(
        decide(store, "a1", BOB, "APPROVE", now).await,
        "bob deciding twice",
    );
    assert!(twice.is_unique(), "{twice}");
    let look_alike = refused(
        decide(store, "a1", BOB_LOOK_ALIKE, "APPROVE", now).await,
        "bob's look-alike approving after bob",
    );
    assert!(look_alike.is_unique(), "{look_alike}");
    refused(
        end(store, "a1", "APPROVED", None).await,
        "APPROVED with one of two approvals",
    );
    refused(
        end(store, "a1", "REJECTED", Some("bob")).await,
        "REJECTED without a rejection",
    );
    refused(
        run(
            store,
            "UPDATE guard_approvals SET target = 'staging' WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "changing what a pending approval asks",
    );
    refused(
        run(
            store,
            "UPDATE guard_approvals SET fingerprint = 'another effect' WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "changing the effect the approvers saw",
    );
    refused(use_(store, "a1").await, "using a pending approval");
    refused(
        run(
            store,
            "DELETE FROM guard_approvals WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "deleting a pending approval before its deadline",
    );
    refused(
        run(
            store,
            "UPDATE guard_approval_decisions SET decision = 'REJECT' WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "rewriting a decision",
    );

    decide(store, "a1", CAROL, "APPROVE", now).await.unwrap();
    end(store, "a1", "APPROVED", None).await.unwrap();
    assert_eq!(status(store, "a1").await, "APPROVED");
    refused(
        decide(store, "a1", DAVE, "REJECT", now).await,
        "a decision after the approval ended",
    );
    for (back, by) in [
        ("PENDING", None),
        ("EXPIRED", None),
        ("REJECTED", Some("dave")),
    ] {
        let undo = if back == "PENDING" {
            run(
                store,
                "UPDATE guard_approvals SET status = 'PENDING', ended_at = NULL WHERE approval_id = 'a1'",
                &[],
            )
            .await
        } else {
            end(store, "a1", back, by).await
        };
        refused(undo, &format!("APPROVED going to {back}"));
    }
    assert_eq!(status(store, "a1").await, "APPROVED");
    // An approval lets its effect run once.
    use_(store, "a1").await.unwrap();
    let again = refused(use_(store, "a1").await, "using an approval twice");
    assert!(again.is_unique(), "{again}");
    refused(
        run(
            store,
            "UPDATE guard_approval_uses SET trace_id = 'other' WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "rewriting an approval's use",
    );
    // A task runs the call it was opened for, and ends once.
    run(
        store,
        "INSERT INTO guard_approval_tasks (approval_id, arguments) VALUES ('a1', '{}')",
        &[],
    )
    .await
    .unwrap();
    refused(
        run(
            store,
            "UPDATE guard_approval_tasks SET arguments = '{\"environment\":\"other\"}' WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "changing what a task runs",
    );
    refused(
        run(
            store,
            "UPDATE guard_approval_tasks SET ended = 'completed' WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "a task ending without its result",
    );
    run(
        store,
        "UPDATE guard_approval_tasks SET ended = 'completed', result = '{}' WHERE approval_id = 'a1'",
        &[],
    )
    .await
    .unwrap();
    refused(
        run(
            store,
            "UPDATE guard_approval_tasks SET ended = 'cancelled' WHERE approval_id = 'a1'",
            &[],
        )
        .await,
        "a task ending twice",
    );

    // Its deadline passed by the database's clock. The replica deciding claims a time
    // before the deadline (its clock runs late): the database decides by its own.
    open(store, "a2", 2, now - 120_000, now - 1).await;
    refused(
        decide(store, "a2", BOB, "APPROVE", now - 60_000).await,
        "a decision after the deadline",
    );
    refused(
        end(store, "a2", "APPROVED", None).await,
        "approving after the deadline",
    );
    end(store, "a2", "EXPIRED", None).await.unwrap();
    refused(
        decide(store, "a2", BOB, "APPROVE", now).await,
        "a decision on an expired approval",
    );
    refused(use_(store, "a2").await, "using an expired approval");

    // A link decides once and speaks for one person (dave's, which he never used).
    run(
        store,
        "UPDATE guard_approval_links SET used_at = $1 WHERE token_sha256 = 'a1-dave'",
        &[now.into()],
    )
    .await
    .unwrap();
    refused(
        run(
            store,
            "UPDATE guard_approval_links SET used_at = $1 WHERE token_sha256 = 'a1-dave'",
            &[(now + 1).into()],
        )
        .await,
        "using a link twice",
    );
    refused(
        run(
            store,
            "UPDATE guard_approval_links SET user_id = 'mallory' WHERE token_sha256 = 'a1-dave'",
            &[],
        )
        .await,
        "a link changing whom it speaks for",
    );

    // An ended approval is purged with its links and decisions.
    run(
        store,
        "DELETE FROM guard_approvals WHERE approval_id IN ('a1', 'a2')",
        &[],
    )
    .await
    .expect("ended approvals are purged");
    let mut tx = store.begin().await.unwrap();
    for table in [
        "guard_approval_links",
        "guard_approval_decisions",
        "guard_approval_uses",
    ] {
        let sql = format!("SELECT count(*) AS n FROM {table}");
        let n = tx
            .query_opt(&sql, &[])
            .await
            .unwrap()
            .unwrap()
            .int("n")
            .unwrap();
        assert_eq!(n, 0, "{table} went with its approvals");
    }
    tx.rollback().await.unwrap();
}

/// A decision row inserted with whatever columns a forger picks.
async fn forge(
    store: &dyn OperationStore,
    id: &str,
    (user, link): (&str, Option<&str>),
    decision: &str,
    seal: Option<&str>,
) -> Result<u64, StoreError> {
    run(
        store,
        "INSERT INTO guard_approval_decisions
             (approval_id, tenant, user_id, skeleton, decision, at, link_sha256, seal)
         VALUES ($1, 'acme', $2, $2, $3, $4, $5, $6)",
        &[
            id.into(),
            user.into(),
            decision.into(),
            now_ms().into(),
            link.into(),
            seal.into(),
        ],
    )
    .await
}

/// What the server's own role (or the tables' owner) might write to make it look as if
/// someone approved who did not: the database refuses each, and guard's own decisions
/// still go through.
async fn the_database_takes_decisions_only_from_listed_people_through_their_links(
    store: &dyn OperationStore,
) {
    let now = now_ms();
    open(store, "f1", 2, now, now + 60_000).await;
    open(store, "f2", 2, now, now + 60_000).await;
    // (i) The requester approving their own request: through their own link, or through a
    // link issued to them as an approver.
    refused(
        forge(
            store,
            "f1",
            ("alice", Some("f1-alice")),
            "APPROVE",
            Some("s"),
        )
        .await,
        "the requester approving through their link",
    );
    refused(
        issue(store, "f1", "APPROVER", ("acme", "alice")).await,
        "an approver's link for the requester",
    );
    // (ii) Someone the approval does not list, with or without a link of their own, or
    // through a listed approver's link.
    refused(
        issue(store, "f1", "APPROVER", ("acme", "mallory")).await,
        "a link for someone not listed",
    );
    refused(
        issue(store, "f1", "APPROVER", ("other", "bob")).await,
        "a link for a listed name in another tenant",
    );
    for link in [None, Some("f1-mallory"), Some("f1-bob")] {
        refused(
            forge(store, "f1", ("mallory", link), "APPROVE", Some("s")).await,
            &format!("mallory approving through {link:?}"),
        );
    }
    // (iii) An approval made APPROVED without decisions, or opened already decided, without
    // its list, or listing its requester.
    refused(
        end(store, "f1", "APPROVED", None).await,
        "APPROVED without decisions",
    );
    let approval =
        |status: &str, approvers: Option<&str>| {
            let sql =
                format!(
            "INSERT INTO guard_approvals (approval_id, tool, target, summary, tenant, user_id,
                 trace_id, bound_sha256, required, created_at, expires_at, status, ended_at,
                 approvers)
             VALUES ('f3', 'deploy', 'production', 'Deploy v2', 'acme', 'alice', 'trace',
                 'bound', 2, {now}, {}, '{status}', {}, $1)",
            now + 60_000,
            if status == "PENDING" { "NULL".to_owned() } else { now.to_string() }
        );
            (sql, approvers.map(str::to_owned))
        };
    for (status, approvers) in [
        ("APPROVED", Some(r#"["bob","carol"]"#)),
        ("PENDING", None),
        ("PENDING", Some("not json")),
        ("PENDING", Some(r#"{"bob":1}"#)),
        ("PENDING", Some(r#"["bob","alice"]"#)),
        ("PENDING", Some(r#"["bob"]"#)),
    ] {
        let (sql, approvers) = approval(status, approvers);
        refused(
            run(store, &sql, &[approvers.as_deref().into()]).await,
            &format!("an approval opened {status} listing {approvers:?}"),
        );
    }
    // (iv) A decision copied from another approval or another approver: its link belongs
    // to them, so it is refused; and one without a seal or a link.
    refused(
        forge(store, "f2", ("bob", Some("f1-bob")), "APPROVE", Some("s")).await,
        "bob's decision through his link of another approval",
    );
    refused(
        forge(store, "f1", ("carol", Some("f1-bob")), "APPROVE", Some("s")).await,
        "carol's decision through bob's link",
    );
    refused(
        forge(store, "f1", ("bob", Some("f1-bob")), "APPROVE", None).await,
        "an unsealed decision",
    );
    refused(
        forge(store, "f1", ("bob", None), "APPROVE", Some("s")).await,
        "a decision through no link",
    );
    // (v) A listed approver's name in another case, with an invisible character, or in
    // look-alike letters: none is listed, none gets a link or decides.
    for spelled in ["Carol", "car\u{200b}ol", "\u{0441}arol", "ｃａｒｏｌ"] {
        refused(
            issue(store, "f1", "APPROVER", ("acme", spelled)).await,
            &format!("a link for {spelled:?}"),
        );
        refused(
            forge(
                store,
                "f1",
                (spelled, Some("f1-carol")),
                "APPROVE",
                Some("s"),
            )
            .await,
            &format!("{spelled:?} deciding through carol's link"),
        );
    }
    // Whom an approval asks, and a link's seal, never change (the server's PostgreSQL role
    // holds no grant to try).
    for (sql, what) in [
        (
            r#"UPDATE guard_approvals SET approvers = '["mallory","bob"]' WHERE approval_id = 'f1'"#,
            "changing whom an approval lists",
        ),
        (
            "UPDATE guard_approval_links SET seal = 'another' WHERE token_sha256 = 'f1-bob'",
            "changing a link's seal",
        ),
    ] {
        let error = run(store, sql, &[]).await.expect_err(what);
        assert!(
            error.is_constraint() || error.to_string().contains("permission denied"),
            "{what}: {error}"
        );
    }
    // What guard writes goes through: two listed approvers through their own links.
    decide(store, "f1", BOB, "APPROVE", now).await.unwrap();
    decide(store, "f1", CAROL, "APPROVE", now).await.unwrap();
    end(store, "f1", "APPROVED", None).await.unwrap();
    assert_eq!(status(store, "f1").await, "APPROVED");
}

#[tokio::test]
async fn sqlite_takes_decisions_only_from_listed_people_through_their_links() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("guard.db")).unwrap();
    the_database_takes_decisions_only_from_listed_people_through_their_links(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_takes_decisions_only_from_listed_people_through_their_links_for_every_role() {
    let Some(url) = pg_url("the PostgreSQL approval decisions test") else {
        return;
    };
    // As the server's role, and (in a world of its own) as the tables' owner.
    let world = PgWorld::new(url.clone()).await;
    the_database_takes_decisions_only_from_listed_people_through_their_links(&world.server(2))
        .await;
    world.drop().await;
    let world = PgWorld::new(url).await;
    the_database_takes_decisions_only_from_listed_people_through_their_links(&world.owner()).await;
    world.drop().await;
}

#[tokio::test]
async fn sqlite_keeps_approvals_honest() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("guard.db")).unwrap();
    the_database_keeps_approvals_honest(&store).await;
}

/// A fresh schema with guard's tables, a store on it as the server's role (holding only
/// [`pg::operation_grants_sql`]), and the admin connection that drops both at the end.
struct PgWorld {
    schema: String,
    role: String,
    admin: tokio_postgres::Client,
    url: String,
}

impl PgWorld {
    async fn new(url: String) -> Self {
        let schema = fresh_schema("guard_approvals");
        let role = format!("{schema}_app");
        let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}; CREATE ROLE {role} LOGIN"))
            .await
            .unwrap();
        let owner = PgStore::from_config(
            order_cancel::stores::pg_config(&url, &schema, None).unwrap(),
            1,
        )
        .unwrap();
        owner.migrate().await.unwrap();
        admin
            .batch_execute(&pg::operation_grants_sql(&schema, &role).unwrap())
            .await
            .unwrap();
        Self {
            schema,
            role,
            admin,
            url,
        }
    }

    /// A store logged in as the server's role, with `connections` connections.
    fn server(&self, connections: usize) -> PgStore {
        let config =
            order_cancel::stores::pg_config(&self.url, &self.schema, Some(&self.role)).unwrap();
        PgStore::from_config(config, connections).unwrap()
    }

    /// A store logged in as the tables' owner, whom no grant restricts.
    fn owner(&self) -> PgStore {
        let config = order_cancel::stores::pg_config(&self.url, &self.schema, None).unwrap();
        PgStore::from_config(config, 2).unwrap()
    }

    async fn drop(self) {
        self.admin
            .batch_execute(&format!(
                "DROP SCHEMA {0} CASCADE; DROP OWNED BY {1}; DROP ROLE {1}",
                self.schema, self.role
            ))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_approvals_honest_even_for_the_tables_owner() {
    let Some(url) = pg_url("the PostgreSQL approval tables test") else {
        return;
    };
    let world = PgWorld::new(url).await;
    the_database_keeps_approvals_honest(&world.owner()).await;
    world.drop().await;
}

/// The server's role holds only guard's grants: no decision is deleted, no link deleted or
/// reassigned, and nothing outside the columns guard updates changes; what guard does
/// (open, decide, end, purge) still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_servers_role_holds_only_what_guard_needs() {
    let Some(url) = pg_url("the PostgreSQL approval grants test") else {
        return;
    };
    let world = PgWorld::new(url).await;
    let store = world.server(2);
    let now = now_ms();
    open(&store, "g1", 2, now, now + 60_000).await;
    decide(&store, "g1", BOB, "REJECT", now).await.unwrap();
    for sql in [
        "DELETE FROM guard_approval_decisions WHERE approval_id = 'g1'",
        "UPDATE guard_approvals SET expires_at = expires_at + 1 WHERE approval_id = 'g1'",
        "DELETE FROM guard_approval_links",
        "DELETE FROM guard_approval_uses",
        "DELETE FROM guard_approval_tasks",
        "UPDATE guard_approval_tasks SET arguments = '{}'",
        "UPDATE guard_approvals SET approvers = '[]' WHERE approval_id = 'g1'",
        "UPDATE guard_approval_links SET seal = 'another' WHERE approval_id = 'g1'",
        "UPDATE guard_approval_decisions SET seal = 'another' WHERE approval_id = 'g1'",
    ] {
        let error = run(&store, sql, &[]).await.expect_err(sql);
        assert!(
            error.to_string().contains("permission denied"),
            "{sql}: {error}"
        );
    }
    end(&store, "g1", "REJECTED", Some("bob")).await.unwrap();
    // What a task's tasks/get does: make it, claim its run, end it.
    for sql in [
        "INSERT INTO guard_approval_tasks (approval_id, arguments) VALUES ('g1', '{}')",
        "UPDATE guard_approval_tasks SET runner = 'r', run_at = 1 WHERE approval_id = 'g1'",
        "UPDATE guard_approval_tasks SET ended = 'completed', result = '{}' WHERE approval_id = 'g1'",
    ] {
        run(&store, sql, &[]).await.expect(sql);
    }
    open(&store, "g2", 1, now - 120_000, now - 1).await;
    end(&store, "g2", "EXPIRED", None).await.unwrap();
    run(
        &store,
        "DELETE FROM guard_approvals WHERE approval_id IN ('g1', 'g2')",
        &[],
    )
    .await
    .expect("the server's role purges ended approvals, their decisions and tasks with them");
    world.drop().await;
}

/// One approver deciding from two replicas at the same moment: two stores (two connection
/// pools, as two processes have), each deciding in its own transaction. The database takes
/// one decision and refuses the other, whatever the order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_approver_racing_from_two_replicas_decides_once() {
    let Some(url) = pg_url("the PostgreSQL approval race test") else {
        return;
    };
    let world = PgWorld::new(url).await;
    let (one, two) = (world.server(1), world.server(1));
    let now = now_ms();
    for round in 0..20 {
        let id = format!("race{round}");
        open(&one, &id, 2, now, now + 60_000).await;
        let (a, b) = tokio::join!(
            decide(&one, &id, BOB, "APPROVE", now),
            decide(&two, &id, BOB_LOOK_ALIKE, "APPROVE", now),
        );
        let taken = [&a, &b].iter().filter(|r| r.is_ok()).count();
        assert_eq!(taken, 1, "round {round}: one decision taken: {a:?} {b:?}");
        let lost = a.err().or(b.err()).unwrap();
        assert!(lost.is_unique(), "round {round}: {lost}");
    }
    world.drop().await;
}
