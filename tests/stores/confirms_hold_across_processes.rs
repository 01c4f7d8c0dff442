//! order-cancel as real server processes: four processes confirming concurrently against
//! one PostgreSQL, four processes opening tickets under the same idempotency keys, and a
//! process killed with SIGKILL in the middle of confirms (and of a keyed call), on both
//! stores. The processes are the `order-cancel` binary on stdio, each with its own pool.

use crate::support;

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::Duration,
};

use crate::support::orders::{Engine, SCOPE, World, paid_orders, seed_rows};
use guard_tests::pg_url;
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
    transport::TokioChildProcess,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

type Server = RunningService<RoleClient, ()>;

/// The order-cancel binary, built once per test process in this test's own target directory.
fn binary() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        support::external::example_bin(
            &support::external::workspace_root(),
            "order-cancel",
            "ORDER_CANCEL_BIN",
        )
    })
    .clone()
}

/// Starts an order-cancel process as alice of tenant_demo on the world's store.
pub(crate) async fn spawn(world: &World, db: Option<&Path>) -> (Server, u32) {
    spawn_with(world, db, &[], &[]).await
}

/// [`spawn`] with more arguments and environment.
async fn spawn_with(
    world: &World,
    db: Option<&Path>,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Server, u32) {
    let mut command = tokio::process::Command::new(binary());
    command
        .args(args)
        .env_remove("ORDER_CANCEL_INTENT_TTL")
        .env_remove("ORDER_CANCEL_PREPARE_RATE")
        .env_remove("GUARD_ALLOWLIST")
        // The default allowlist is the user's: this test process's, not the machine's.
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join(format!("guard-tests-config-{}", std::process::id())),
        )
        .envs(env.iter().copied());
    match world.engine {
        Engine::Postgres => {
            let url = pg_url("a server process").expect("checked by World");
            command
                .arg("--pg")
                .arg(url)
                .arg("--pg-schema")
                .arg(world.schema.as_deref().unwrap())
                .arg("--pg-connections")
                .arg("8");
        }
        Engine::Sqlite => {
            command.arg("--db").arg(db.expect("a SQLite path"));
        }
    }
    command
        .env("GUARD_TENANT", "tenant_demo")
        .env("GUARD_USER", "alice")
        .env("GUARD_SCOPES", SCOPE)
        .env("RUST_LOG", "warn");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("order-cancel starts");
    let pid = transport.id().expect("a pid");
    let server = ().serve(transport).await.expect("MCP session with the process");
    (server, pid)
}

async fn confirm(server: &Server, id: &str) -> Result<CallToolResult, rmcp::ServiceError> {
    server
        .call_tool(
            CallToolRequestParams::new("confirm_order_cancel")
                .with_arguments(json!({"operation_id": id}).as_object().unwrap().clone()),
        )
        .await
}

/// `(request_id, already_processed)` of a SUBMITTED answer; panics on anything else.
fn submitted(result: &CallToolResult) -> (i64, bool) {
    assert_ne!(result.is_error, Some(true), "a confirm failed: {result:?}");
    let body = result.structured_content.as_ref().expect("structured");
    assert_eq!(body["status"], "SUBMITTED", "{body}");
    (
        body["result"]["request_id"].as_i64().expect("request_id"),
        body["already_processed"]
            .as_bool()
            .expect("already_processed"),
    )
}

/// Confirms each of `ids` on `server`, 8 at a time.
async fn confirm_all(server: Arc<Server>, ids: Vec<String>) -> Vec<(String, (i64, bool))> {
    let gate = Arc::new(Semaphore::new(8));
    let calls = ids.into_iter().map(|id| {
        let (server, gate) = (server.clone(), gate.clone());
        tokio::spawn(async move {
            let _slot = gate.acquire_owned().await.unwrap();
            let result = confirm(&server, &id).await.expect("protocol-level success");
            (id, submitted(&result))
        })
    });
    let mut out = Vec::new();
    for call in calls {
        out.push(call.await.expect("task"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_confirm_each_operation_exactly_once() {
    let orders = paid_orders(10_000, 201);
    let Some(world) = World::with_orders(Engine::Postgres, &seed_rows(&orders)).await else {
        return;
    };
    let alice = world.alice().await;
    let same = support::orders::prepare(&alice, &orders[0].1).await;
    let mut different = Vec::new();
    for (order_id, order_no) in &orders[1..] {
        different.push(world.stored_intent(*order_id, order_no, "alice").await);
    }
    let mut servers = Vec::new();
    for _ in 0..4 {
        servers.push(Arc::new(spawn(&world, None).await.0));
    }

    // 4 processes × 8 concurrent confirms of one operation.
    let runs = servers
        .iter()
        .map(|server| tokio::spawn(confirm_all(server.clone(), vec![same.clone(); 8])));
    let mut answers = Vec::new();
    for run in runs {
        answers.extend(run.await.unwrap());
    }
    assert_eq!(answers.len(), 32);
    let fresh = answers.iter().filter(|(_, (_, already))| !already).count();
    assert_eq!(fresh, 1, "one effect, 31 already_processed");
    let request_ids: HashSet<i64> = answers.iter().map(|(_, (r, _))| *r).collect();
    assert_eq!(request_ids.len(), 1);
    assert_eq!(world.requests(orders[0].0).await, 1);

    // 4 processes × 200 operations, each process in its own order, 8 at a time.
    let runs = servers.iter().enumerate().map(|(i, server)| {
        let mut ids = different.clone();
        ids.rotate_left(i * 50);
        if i % 2 == 1 {
            ids.reverse();
        }
        tokio::spawn(confirm_all(server.clone(), ids))
    });
    let mut by_operation: HashMap<String, Vec<(i64, bool)>> = HashMap::new();
    for run in runs {
        for (id, answer) in run.await.unwrap() {
            by_operation.entry(id).or_default().push(answer);
        }
    }
    assert_eq!(by_operation.len(), 200);
    for (id, answers) in &by_operation {
        assert_eq!(answers.len(), 4, "{id}");
        assert_eq!(
            answers.iter().filter(|(_, already)| !already).count(),
            1,
            "{id}"
        );
        let ids: HashSet<i64> = answers.iter().map(|(r, _)| *r).collect();
        assert_eq!(ids.len(), 1, "{id}: every process reports the same request");
    }
    let requests = world
        .count(
            "SELECT COUNT(*) AS n FROM order_cancel_requests WHERE order_id >= 10001",
            &[],
        )
        .await;
    assert_eq!(requests, 200, "exactly one request per operation");
    let orders_with_more = world
        .count(
            "SELECT COUNT(*) AS n FROM (SELECT order_id FROM order_cancel_requests
             GROUP BY order_id HAVING COUNT(*) > 1) AS doubled",
            &[],
        )
        .await;
    assert_eq!(orders_with_more, 0);
}

async fn open_ticket(server: &Server, key: &str) -> CallToolResult {
    server
        .call_tool(
            CallToolRequestParams::new("open_ticket").with_arguments(
                json!({"request_id": key, "order_no": "A10001", "subject": "parcel arrived damaged"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .expect("protocol-level success")
}

/// `Some((ticket_id, already_processed))`, or `None` for `IN_PROGRESS`; panics on anything
/// else.
fn ticket_or_busy(result: &CallToolResult) -> Option<(i64, bool)> {
    if result.is_error == Some(true) {
        let text = support::text(result);
        assert!(text.starts_with("[IN_PROGRESS]"), "{text}");
        return None;
    }
    let body = result.structured_content.as_ref().expect("structured");
    Some((
        body["result"]["ticket_id"].as_i64().expect("ticket_id"),
        body["already_processed"]
            .as_bool()
            .expect("already_processed"),
    ))
}

/// Four processes on one PostgreSQL: 20 keys, each sent by all four at once, file 20
/// tickets; then a process is killed while its keyed call is inside its transaction, and the
/// client's retry through another process files the one ticket.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_open_one_ticket_per_key() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let mut servers = Vec::new();
    let mut pids = Vec::new();
    for _ in 0..4 {
        let (server, pid) = spawn(&world, None).await;
        servers.push(Arc::new(server));
        pids.push(pid);
    }
    let keys: Vec<String> = (0..20).map(|i| format!("key-{i}")).collect();
    let mut calls = Vec::new();
    for key in &keys {
        for server in &servers {
            let (server, key) = (server.clone(), key.clone());
            calls.push(tokio::spawn(async move {
                let answer = ticket_or_busy(&open_ticket(&server, &key).await);
                (key, answer)
            }));
        }
    }
    let mut by_key: HashMap<String, Vec<Option<(i64, bool)>>> = HashMap::new();
    for call in calls {
        let (key, answer) = call.await.unwrap();
        by_key.entry(key).or_default().push(answer);
    }
    for (key, answers) in &by_key {
        let fresh = answers.iter().flatten().filter(|(_, again)| !again).count();
        assert_eq!(fresh, 1, "{key}: {answers:?}");
        let ids: HashSet<i64> = answers.iter().flatten().map(|(t, _)| *t).collect();
        assert_eq!(ids.len(), 1, "{key}: every process reports the same ticket");
    }
    assert_eq!(
        world
            .count("SELECT COUNT(*) AS n FROM support_tickets", &[])
            .await,
        20
    );
    // Each key asked again on every process: the stored ticket.
    for key in &keys {
        for server in &servers {
            let again = ticket_or_busy(&open_ticket(server, key).await).expect("settled");
            assert!(again.1, "{key} ran again");
        }
    }

    // The order the ticket references is held, so the first call waits inside its
    // transaction; its process dies there.
    let mut holder = world.owner.begin().await.expect("owner tx");
    holder
        .execute(
            "SELECT order_id FROM orders WHERE order_id = 1001 FOR UPDATE",
            &[],
        )
        .await
        .expect("lock the order");
    let doomed = servers[0].clone();
    let in_flight = tokio::spawn(async move {
        doomed.call_tool(
        CallToolRequestParams::new("open_ticket").with_arguments(
            json!({"request_id": "dropped", "order_no": "A10001", "subject": "parcel arrived damaged"})
                .as_object()
                .unwrap()
                .clone(),
        ),
    ).await
    });
    world
        .wait_for_lock_wait("INSERT INTO support_tickets")
        .await;
    assert_eq!(
        ticket_or_busy(&open_ticket(&servers[1], "dropped").await),
        None
    );
    let killed = Command::new("kill")
        .args(["-KILL", &pids[0].to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    assert!(
        in_flight.await.unwrap().is_err(),
        "the killed process answered"
    );
    holder.rollback().await.expect("release the order");
    let mut retried = None;
    for _ in 0..600 {
        if let Some(answer) = ticket_or_busy(&open_ticket(&servers[2], "dropped").await) {
            retried = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (ticket, again) = retried.expect("the dead call's transaction ended");
    assert!(!again, "the killed process's call cannot have committed");
    assert_eq!(
        ticket_or_busy(&open_ticket(&servers[3], "dropped").await),
        Some((ticket, true))
    );
    assert_eq!(
        world
            .count("SELECT COUNT(*) AS n FROM support_tickets", &[])
            .await,
        21,
        "the retry after the dropped call filed exactly one ticket"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_process_killed_mid_confirm_leaves_whole_operations() {
    killed_mid_confirm(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_process_killed_mid_confirm_leaves_whole_operations() {
    killed_mid_confirm(Engine::Postgres).await;
}

/// Confirms 120 operations 8 at a time, SIGKILLs the process after the first answers, then
/// asks a restarted process about each one.
async fn killed_mid_confirm(engine: Engine) {
    let orders = paid_orders(20_000, 120);
    let Some(world) = World::with_orders(engine, &seed_rows(&orders)).await else {
        return;
    };
    let db = world.sqlite_path();
    let mut ids = Vec::new();
    for (order_id, order_no) in &orders {
        ids.push(world.stored_intent(*order_id, order_no, "alice").await);
    }
    let (server, pid) = spawn(&world, db.as_deref()).await;
    let server = Arc::new(server);
    let gate = Arc::new(Semaphore::new(8));
    let (answered_tx, mut answered) = tokio::sync::mpsc::unbounded_channel();
    for id in ids.clone() {
        let (server, gate, answered_tx) = (server.clone(), gate.clone(), answered_tx.clone());
        tokio::spawn(async move {
            let _slot = gate.acquire_owned().await.unwrap();
            if let Ok(result) = confirm(&server, &id).await {
                let _ = answered_tx.send((id, result));
            }
        });
    }
    drop(answered_tx);
    let mut seen_submitted = HashSet::new();
    while seen_submitted.len() < 10 {
        let (id, result) = answered.recv().await.expect("answers before the kill");
        submitted(&result);
        seen_submitted.insert(id);
    }
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // Answers already on their way out of the dying process still count as seen.
    while let Ok(Some((id, result))) =
        tokio::time::timeout(Duration::from_secs(5), answered.recv()).await
    {
        submitted(&result);
        seen_submitted.insert(id);
    }

    let (restarted, _) = spawn(&world, db.as_deref()).await;
    let (mut done, mut pending) = (0, 0);
    for (id, (order_id, _)) in ids.iter().zip(&orders) {
        let result = restarted
            .call_tool(
                CallToolRequestParams::new("get_operation_result")
                    .with_arguments(json!({"operation_id": id}).as_object().unwrap().clone()),
            )
            .await
            .expect("get_operation_result");
        let body: &Value = result.structured_content.as_ref().expect("structured");
        let requests = world.requests(*order_id).await;
        match body["status"].as_str() {
            Some("SUBMITTED") => {
                done += 1;
                assert_eq!(requests, 1, "{id}: submitted with its one request");
                let request_id = world
                    .query(
                        "SELECT request_id FROM order_cancel_requests WHERE source_operation_id = $1",
                        &[id.as_str().into()],
                    )
                    .await[0]
                    .int("request_id")
                    .unwrap();
                assert_eq!(body["result"]["request_id"].as_i64(), Some(request_id));
            }
            Some("PREPARED") => {
                pending += 1;
                assert_eq!(requests, 0, "{id}: still prepared, nothing filed");
                assert!(
                    !seen_submitted.contains(id),
                    "{id}: answered SUBMITTED, then lost"
                );
                assert_eq!(body["result"], Value::Null);
            }
            other => panic!("{id}: unexpected status {other:?}: {body}"),
        }
    }
    eprintln!(
        "{engine:?}: after SIGKILL, {done} operations SUBMITTED and {pending} still PREPARED; none half-done"
    );
    assert_eq!(done + pending, 120);

    // The survivors can be confirmed once each on the restarted process.
    let left: Vec<String> = ids
        .iter()
        .filter(|id| !seen_submitted.contains(*id))
        .cloned()
        .collect();
    confirm_all(Arc::new(restarted), left).await;
    let total = world
        .count(
            "SELECT COUNT(*) AS n FROM order_cancel_requests WHERE order_id >= 20000",
            &[],
        )
        .await;
    assert_eq!(total, 120);
}

/// Prepares cancelling `order_no` on a server process; the whole answer.
async fn prepare_on(server: &Server, order_no: &str) -> CallToolResult {
    server
        .call_tool(
            CallToolRequestParams::new("prepare_order_cancel").with_arguments(
                json!({"order_no": order_no, "reason": "customer changed their mind"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .expect("protocol-level success")
}

/// The stored lifetime of the intent a successful prepare answer names, in milliseconds.
async fn stored_ttl_ms(world: &World, prepared: &CallToolResult) -> i64 {
    assert_ne!(
        prepared.is_error,
        Some(true),
        "prepare failed: {prepared:?}"
    );
    let id = prepared.structured_content.as_ref().expect("structured")["operation_id"]
        .as_str()
        .expect("operation_id")
        .to_owned();
    world
        .count(
            "SELECT expires_at - created_at AS n FROM guard_operations WHERE operation_id = $1",
            &[id.into()],
        )
        .await
}

fn refusal_text(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a refusal: {result:?}"
    );
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// A deployment's limits by flag: intents live as long as `--intent-ttl` says and each user
/// may prepare as often as `--prepare-rate` says, instead of the declared 10m and 5/min.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_set_by_flag() {
    let orders = paid_orders(8100, 3);
    let world = World::with_orders(Engine::Sqlite, &seed_rows(&orders))
        .await
        .expect("SQLite needs no setup");
    let db = world.sqlite_path();
    let args = ["--intent-ttl", "90s", "--prepare-rate", "1/min"];
    let (server, _) = spawn_with(&world, db.as_deref(), &args, &[]).await;
    let first = prepare_on(&server, &orders[0].1).await;
    assert_eq!(stored_ttl_ms(&world, &first).await, 90_000);
    let limited = refusal_text(&prepare_on(&server, &orders[1].1).await);
    assert!(limited.starts_with("[RATE_LIMITED]"), "{limited}");
    assert!(limited.contains("1 per minute"), "{limited}");
    server.cancel().await.ok();
}

/// The same limits from the environment, as a container or a service manager sets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_set_by_environment() {
    let orders = paid_orders(8200, 3);
    let world = World::with_orders(Engine::Sqlite, &seed_rows(&orders))
        .await
        .expect("SQLite needs no setup");
    let db = world.sqlite_path();
    let env = [
        ("ORDER_CANCEL_INTENT_TTL", "2h"),
        ("ORDER_CANCEL_PREPARE_RATE", "2/h"),
    ];
    let (server, _) = spawn_with(&world, db.as_deref(), &[], &env).await;
    let first = prepare_on(&server, &orders[0].1).await;
    assert_eq!(stored_ttl_ms(&world, &first).await, 2 * 3600 * 1000);
    let second = prepare_on(&server, &orders[1].1).await;
    assert_eq!(stored_ttl_ms(&world, &second).await, 2 * 3600 * 1000);
    let limited = refusal_text(&prepare_on(&server, &orders[2].1).await);
    assert!(limited.starts_with("[RATE_LIMITED]"), "{limited}");
    assert!(limited.contains("2 per hour"), "{limited}");
    server.cancel().await.ok();
}

/// Without the settings, the tool's declared limits hold: 10 minutes, 5 per minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_limits_hold_without_settings() {
    let orders = paid_orders(8300, 1);
    let world = World::with_orders(Engine::Sqlite, &seed_rows(&orders))
        .await
        .expect("SQLite needs no setup");
    let db = world.sqlite_path();
    let (server, _) = spawn(&world, db.as_deref()).await;
    let first = prepare_on(&server, &orders[0].1).await;
    assert_eq!(stored_ttl_ms(&world, &first).await, 10 * 60 * 1000);
    server.cancel().await.ok();
}

/// Arguments, environment, and the setting the startup error must name.
type BadSetting = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// A limit that does not read stops the server before it serves anything, naming the
/// setting and how to write it; by flag and by environment alike.
#[test]
fn bad_limits_are_a_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("orders.db");
    let cases: [BadSetting; 9] = [
        (&["--intent-ttl", "0s"], &[], "--intent-ttl"),
        (&["--intent-ttl", "10"], &[], "--intent-ttl"),
        (&["--intent-ttl", "25h"], &[], "--intent-ttl"),
        (&["--intent-ttl=-5m"], &[], "--intent-ttl"),
        (&["--prepare-rate", "5/week"], &[], "--prepare-rate"),
        (&["--prepare-rate", "0/min"], &[], "--prepare-rate"),
        (&["--prepare-rate", "lots"], &[], "--prepare-rate"),
        (&[], &[("ORDER_CANCEL_INTENT_TTL", "soon")], "--intent-ttl"),
        (
            &[],
            &[("ORDER_CANCEL_PREPARE_RATE", "5/fortnight")],
            "--prepare-rate",
        ),
    ];
    for (args, env, setting) in cases {
        let output = Command::new(binary())
            .arg("--db")
            .arg(&db)
            .args(args)
            .env_remove("ORDER_CANCEL_INTENT_TTL")
            .env_remove("ORDER_CANCEL_PREPARE_RATE")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("order-cancel runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "{args:?} {env:?} must not start:\n{stderr}"
        );
        let variable = match setting {
            "--intent-ttl" => "ORDER_CANCEL_INTENT_TTL",
            _ => "ORDER_CANCEL_PREPARE_RATE",
        };
        assert!(
            stderr.contains(setting) && stderr.contains(variable) && stderr.contains("for example"),
            "{args:?} {env:?}: the error names {setting} and how to write it:\n{stderr}"
        );
        assert!(
            !db.exists(),
            "nothing was opened before the settings were read"
        );
    }
}

/// The tools an order-cancel process publishes, answered within a generous bound (a
/// server stuck reading its allowlist fails instead of hanging the suite).
async fn published(world: &World, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    // Built before the clock starts: a build is not a server stuck on its allowlist.
    binary();
    let db = world.sqlite_path();
    let listed = async {
        let (server, _) = spawn_with(world, db.as_deref(), args, env).await;
        let mut names: Vec<String> = server
            .list_all_tools()
            .await
            .expect("tools/list answers")
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        server.cancel().await.ok();
        names
    };
    tokio::time::timeout(Duration::from_secs(60), listed)
        .await
        .expect("the server answered tools/list")
}

/// order-cancel publishes what its allowlist names: all four by the shipped file, fewer
/// by `--allowlist` or `GUARD_ALLOWLIST`, and none (without blocking) when the named file
/// is a FIFO.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowlist_decides_which_tools_order_cancel_publishes() {
    let world = World::new(Engine::Sqlite)
        .await
        .expect("SQLite needs no setup");
    assert_eq!(
        published(&world, &[], &[]).await,
        [
            "confirm_order_cancel",
            "get_operation_result",
            "open_ticket",
            "prepare_order_cancel"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let lookup_only = dir.path().join("lookup-only.toml");
    std::fs::write(&lookup_only, "tools = [\"get_operation_result\"]\n").unwrap();
    let path = lookup_only.to_str().unwrap();
    assert_eq!(
        published(&world, &["--allowlist", path], &[]).await,
        ["get_operation_result"]
    );
    assert_eq!(
        published(&world, &[], &[("GUARD_ALLOWLIST", path)]).await,
        ["get_operation_result"]
    );
    let fifo = dir.path().join("fifo.toml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    assert!(
        published(&world, &["--allowlist", fifo.to_str().unwrap()], &[])
            .await
            .is_empty()
    );
}

/// Four processes started together on a database file that does not exist yet all open it.
/// Each switches the new file to WAL; when two switch at once SQLite refuses one of them at
/// once ("database is locked") rather than let both wait on each other, and the store must
/// try again instead of failing the server's start. Many rounds, because the collision is a
/// matter of timing.
#[test]
fn processes_starting_together_on_a_new_database_all_open_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    for round in 0..100 {
        let db = dir.path().join(format!("orders-{round}.db"));
        let starts: Vec<_> = (0..4)
            .map(|_| {
                Command::new(binary())
                    .arg("--db")
                    .arg(&db)
                    .env("XDG_CONFIG_HOME", &config)
                    .env("GUARD_TENANT", "tenant_demo")
                    .env("GUARD_USER", "alice")
                    .env("GUARD_SCOPES", SCOPE)
                    .env("RUST_LOG", "warn")
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("order-cancel starts")
            })
            .collect();
        for start in starts {
            let out = start.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !stderr.contains("cannot open"),
                "round {round}: a server could not open the new database:\n{stderr}"
            );
        }
    }
}
