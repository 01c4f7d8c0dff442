//! How many two-phase operations a store carries: prepare + confirm pairs per second, next to
//! the rate at which the same store commits a one-row transaction (a pair is two durable
//! commits, so half that rate is the ceiling).
//!
//! Each measured pair is one `prepare_order_cancel` `tools/call` and one
//! `confirm_order_cancel` `tools/call` for the returned `operation_id`, through a real rmcp
//! client connected in process over `tokio::io::duplex`; every confirm is checked to answer
//! `SUBMITTED` with `already_processed: false`. Each pair cancels an order of its own (one
//! pending intent per target, one request per order): the orders for a sample are inserted
//! before its clock starts.
//!
//! The server is order-cancel's own [`OrderCancel`], with one deployment setting: the
//! prepare's rate, which order-cancel declares as `rate = "5/min"` per user and which would
//! refuse all but five pairs a minute, is raised to `u32::MAX` a second with
//! `Operations::rate_limit`. The limiter still runs in every prepare (bucket lock, window
//! count, event insert); it just never refuses.
//!
//! - `pairs/N` for N in 1, 4, 16 and 64: N client connections, each to its own server
//!   instance (its own guard, a user of its own) sharing one store, as N server processes
//!   would share a database; a sample's pairs are spread evenly over them and run
//!   concurrently (one connection doing pairs one after another for N = 1).
//! - `one_row_tx/N`: a transaction with one `INSERT` of one row on the same store, from N
//!   concurrent tasks: the cheapest commit that must be made durable. (An empty transaction
//!   sends nothing to the store at all: `BEGIN` goes with a transaction's first statement.)
//!
//! `TWO_PHASE_CLIENTS` (a comma-separated list, default `1,4,16,64`) and `TWO_PHASE_STORES`
//! (default `sqlite,postgres`) measure only some.
//!
//! Stores: SQLite in a file under the system's temp dir (WAL, `synchronous = FULL`, as
//! `SqliteStore` opens it); PostgreSQL at `GUARD_TEST_PG_URL` in a fresh schema set up by
//! `order_cancel::stores::setup_postgres` and used as order-cancel's restricted role (a pool
//! of as many connections as the most clients measured). Without `GUARD_TEST_PG_URL` the PostgreSQL benches are skipped, loudly (and fail when
//! `CI` is set).
//!
//! Run with `cargo bench -p guard-tests --bench two_phase`.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicI64, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use order_cancel::{
    OrderCancel,
    schema::{self, SeedOrder},
    stores,
};
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
};
use rmcp_guard::{
    EnvIdentity, Guard, Identity,
    ops::{OperationStore, Operations, PgStore, Rate},
};
use serde_json::{Value, json};
use tokio::task::JoinSet;

const SCOPE: &str = "order.cancel.request";
const TENANT: &str = "tenant_bench";
/// Client connections (and concurrent tasks) measured, unless `TWO_PHASE_CLIENTS` says.
const CLIENT_COUNTS: &str = "1,4,16,64";
/// The prepare's rate here: order-cancel declares 5 a minute per user, which would refuse
/// all but five pairs a minute; this deployment limit keeps the check (and its cost) in every
/// prepare without refusing any.
const BENCH_RATE: Rate = Rate {
    limit: u32::MAX,
    per: Duration::from_secs(1),
};

// ---------------------------------------------------------------------------------------
// The harness: one store, its owner's handle, sixteen connected clients.
// ---------------------------------------------------------------------------------------

type Client = RunningService<RoleClient, ()>;

/// One store under test and everything the benches need around it.
struct Bed {
    name: &'static str,
    /// The servers' store (on PostgreSQL: order-cancel's restricted role).
    store: Arc<dyn OperationStore>,
    /// The schema owner's store: seeds orders, reads the truth afterwards.
    owner: Arc<dyn OperationStore>,
    /// The client counts measured.
    counts: Vec<usize>,
    /// `clients[i]` is connected to a server of its own, as `user_{i}`.
    clients: Vec<Arc<Client>>,
    /// The next order id to seed.
    next_order: AtomicI64,
    /// Pairs completed and checked, over all samples (warm-up included).
    pairs: AtomicU64,
    /// The next value `one_row_tx` inserts.
    next_row: Arc<AtomicI64>,
    /// PostgreSQL: the schema to drop at the end.
    schema: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl Bed {
    async fn sqlite(counts: Vec<usize>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = stores::open_sqlite(&dir.path().join("orders.db"), &[])
            .await
            .expect("SQLite store opens");
        let store: Arc<dyn OperationStore> = Arc::new(store);
        Self::with(
            "sqlite",
            counts,
            store.clone(),
            store,
            None,
            Some(dir),
            "CREATE TABLE bench_commit_probe (n BIGINT NOT NULL)",
        )
        .await
    }

    async fn postgres(url: &str, counts: Vec<usize>) -> Self {
        let schema = format!("guard_bench_{}", std::process::id());
        stores::setup_postgres(url, &schema, &[])
            .await
            .expect("PostgreSQL schema set up");
        let owner = PgStore::from_config(
            stores::pg_config(url, &schema, None).expect("owner config"),
            2,
        )
        .expect("owner pool");
        let pool = counts.iter().copied().max().unwrap_or(1);
        let store = stores::connect_postgres(url, &schema, pool).expect("server role pool");
        Self::with(
            "postgres",
            counts,
            Arc::new(store),
            Arc::new(owner),
            Some(schema),
            None,
            &format!(
                "CREATE TABLE bench_commit_probe (n BIGINT NOT NULL);
                 GRANT INSERT ON bench_commit_probe TO {}",
                schema::APP_ROLE
            ),
        )
        .await
    }

    async fn with(
        name: &'static str,
        counts: Vec<usize>,
        store: Arc<dyn OperationStore>,
        owner: Arc<dyn OperationStore>,
        schema: Option<String>,
        dir: Option<tempfile::TempDir>,
        setup: &str,
    ) -> Self {
        let mut tx = owner.begin().await.expect("owner tx");
        for statement in setup.split(';') {
            tx.execute(statement, &[]).await.expect("bench setup");
        }
        tx.commit().await.expect("owner commit");
        let most = counts.iter().copied().max().unwrap_or(1);
        let mut clients = Vec::with_capacity(most);
        for i in 0..most {
            let identity = EnvIdentity::new(Identity::new(TENANT, format!("user_{i:02}"), [SCOPE]));
            let operations = Operations::new(store.clone(), identity)
                .rate_limit("prepare_order_cancel", BENCH_RATE);
            let server = OrderCancel::new(
                Guard::ephemeral()
                    .expect("guard key")
                    .with_operations(operations),
            );
            clients.push(Arc::new(connect(server).await));
        }
        Self {
            name,
            counts,
            store,
            owner,
            clients,
            next_order: AtomicI64::new(1),
            pairs: AtomicU64::new(0),
            next_row: Arc::new(AtomicI64::new(0)),
            schema,
            _dir: dir,
        }
    }

    /// Unmeasured: inserts `n` fresh cancellable orders; returns the first id.
    async fn seed(&self, n: u64) -> i64 {
        let n = i64::try_from(n).expect("order count");
        let first = self.next_order.fetch_add(n, Ordering::Relaxed);
        let numbers: Vec<String> = (first..first + n).map(order_no).collect();
        let rows: Vec<SeedOrder<'_>> = (first..)
            .zip(&numbers)
            .map(|(order_id, order_no)| SeedOrder {
                order_id,
                tenant: TENANT,
                order_no,
                status: if order_id % 2 == 0 { "PAID" } else { "PENDING" },
                total_cents: 1000 + order_id % 9000,
            })
            .collect();
        let mut tx = self.owner.begin().await.expect("owner tx");
        schema::seed(&mut tx, &rows).await.expect("seed orders");
        tx.commit().await.expect("owner commit");
        first
    }

    /// `iters` pairs over the first `clients` clients, after seeding their orders; the time
    /// from the first prepare to the last confirm.
    async fn pairs(&self, iters: u64, clients: usize) -> Duration {
        let first = self.seed(iters).await;
        let elapsed = spread(iters, clients, |i, share| {
            let client = self.clients[i].clone();
            async move {
                // Client i takes orders first + i, first + i + clients, ...
                for k in 0..share {
                    let id = first + i as i64 + (k * clients as u64) as i64;
                    pair(&client, &order_no(id)).await;
                }
            }
        })
        .await;
        self.pairs.fetch_add(iters, Ordering::Relaxed);
        elapsed
    }

    /// `iters` one-row transactions over `tasks` concurrent tasks.
    async fn one_row_tx(&self, iters: u64, tasks: usize) -> Duration {
        spread(iters, tasks, |_, share| {
            let store = self.store.clone();
            let next = self.next_row.clone();
            async move {
                for _ in 0..share {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let mut tx = store.begin().await.expect("begin");
                    tx.execute(
                        "INSERT INTO bench_commit_probe (n) VALUES ($1)",
                        &[n.into()],
                    )
                    .await
                    .expect("insert");
                    tx.commit().await.expect("commit");
                }
            }
        })
        .await
    }

    /// Every checked pair filed exactly one request and left one SUBMITTED intent.
    async fn verify(&self) {
        let mut tx = self.owner.begin().await.expect("owner tx");
        let mut counts = Vec::new();
        for sql in [
            "SELECT COUNT(*) AS n FROM order_cancel_requests",
            "SELECT COUNT(*) AS n FROM guard_operations WHERE status = 'SUBMITTED'",
            "SELECT COUNT(*) AS n FROM guard_operation_effects",
        ] {
            let rows = tx.query(sql, &[]).await.expect("count");
            counts.push(rows[0].int("n").expect("count column"));
        }
        tx.rollback().await.expect("owner rollback");
        let pairs = i64::try_from(self.pairs.load(Ordering::Relaxed)).expect("pair count");
        assert_eq!(
            counts,
            [pairs, pairs, pairs],
            "{}: one request, one SUBMITTED intent and one effect per pair",
            self.name
        );
        eprintln!("{}: {pairs} pairs checked in the store", self.name);
    }

    async fn close(self) {
        for client in self.clients {
            if let Ok(client) = Arc::try_unwrap(client) {
                let _ = client.cancel().await;
            }
        }
        if let Some(schema) = &self.schema {
            let mut tx = self.owner.begin().await.expect("owner tx");
            tx.execute(&format!("DROP SCHEMA {schema} CASCADE"), &[])
                .await
                .expect("drop the bench schema");
            tx.commit().await.expect("owner commit");
        }
    }
}

fn order_no(id: i64) -> String {
    format!("C{id:09}")
}

/// Runs `task(i, share)` for `i` in `0..tasks` concurrently, the `iters` iterations shared
/// out evenly; returns the time until the last one finished.
async fn spread<F, Fut>(iters: u64, tasks: usize, mut task: F) -> Duration
where
    F: FnMut(usize, u64) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let n = tasks as u64;
    let start = Instant::now();
    let mut set = JoinSet::new();
    for i in 0..tasks {
        let share = iters / n + u64::from((i as u64) < iters % n);
        if share > 0 {
            set.spawn(task(i, share));
        }
    }
    while let Some(done) = set.join_next().await {
        done.expect("a bench task panicked");
    }
    start.elapsed()
}

/// Serves `server` in process and connects a plain client to it.
async fn connect(server: OrderCancel) -> Client {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("the client connects")
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(arguments) = args else {
        unreachable!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"))
}

fn body<'a>(tool: &str, result: &'a CallToolResult) -> &'a Value {
    assert_ne!(result.is_error, Some(true), "{tool} refused: {result:?}");
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("{tool} answered without structured content"))
}

/// Measured: one prepare and one confirm of its operation, checked.
async fn pair(client: &Client, order_no: &str) {
    let prepared = call(
        client,
        "prepare_order_cancel",
        json!({"order_no": order_no, "reason": "customer changed their mind"}),
    )
    .await;
    let prepared = body("prepare_order_cancel", &prepared);
    assert_eq!(prepared["status"], "PREPARED");
    let operation_id = prepared["operation_id"]
        .as_str()
        .expect("operation_id")
        .to_owned();
    let confirmed = call(
        client,
        "confirm_order_cancel",
        json!({"operation_id": operation_id}),
    )
    .await;
    let confirmed = body("confirm_order_cancel", &confirmed);
    assert!(
        confirmed["status"] == "SUBMITTED" && confirmed["already_processed"] == false,
        "the confirm did not submit the operation: {confirmed}"
    );
}

// ---------------------------------------------------------------------------------------
// The benches.
// ---------------------------------------------------------------------------------------

fn bench_store(c: &mut Criterion, rt: &tokio::runtime::Runtime, bed: &Bed) {
    let mut group = c.benchmark_group(format!("two_phase/{}", bed.name));
    // Flat sampling: every sample runs the same number of iterations, so no sample is too
    // small to keep every client busy.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .throughput(Throughput::Elements(1));
    for &n in &bed.counts {
        group.bench_function(format!("one_row_tx/{n}"), |b| {
            b.to_async(rt).iter_custom(|iters| bed.one_row_tx(iters, n));
        });
    }
    for &n in &bed.counts {
        group.bench_function(format!("pairs/{n}"), |b| {
            b.to_async(rt).iter_custom(|iters| bed.pairs(iters, n));
        });
    }
    group.finish();
}

fn two_phase(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    let counts = client_counts();
    if measures("sqlite") {
        let sqlite = rt.block_on(Bed::sqlite(counts.clone()));
        bench_store(c, &rt, &sqlite);
        rt.block_on(async {
            sqlite.verify().await;
            sqlite.close().await;
        });
    }
    if !measures("postgres") {
        return;
    }
    let Some(url) = guard_tests::pg_url("the PostgreSQL half of the two-phase bench") else {
        return;
    };
    let postgres = rt.block_on(Bed::postgres(&url, counts));
    bench_store(c, &rt, &postgres);
    rt.block_on(async {
        postgres.verify().await;
        postgres.close().await;
    });
}

/// The client counts to measure: `TWO_PHASE_CLIENTS`, else [`CLIENT_COUNTS`].
fn client_counts() -> Vec<usize> {
    let list = std::env::var("TWO_PHASE_CLIENTS").unwrap_or_else(|_| CLIENT_COUNTS.to_owned());
    list.split(',')
        .map(|n| {
            n.trim().parse().ok().filter(|&n| n > 0).unwrap_or_else(|| {
                panic!("TWO_PHASE_CLIENTS holds {n:?}: give counts such as 1,4,16,64")
            })
        })
        .collect()
}

/// Whether `store` is measured: listed in `TWO_PHASE_STORES`, or that variable unset.
fn measures(store: &str) -> bool {
    std::env::var("TWO_PHASE_STORES")
        .map_or(true, |list| list.split(',').any(|s| s.trim() == store))
}

criterion_group!(benches, two_phase);
criterion_main!(benches);
