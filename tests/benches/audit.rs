//! What the audit log costs.
//!
//! - `audit_verify`: verifying a generated log of 200,000 records against its checkpoint,
//!   from records in memory (`verify`, what `AuditLog::verify` runs after reading the
//!   rows) and from an export (`verify_export`, what `guard-audit verify --file` runs).
//!   Verification runs on one thread, so it is timed by that thread's CPU clock: the
//!   throughput, in records per second, is of one core, whatever else the machine runs.
//! - `audit_write`: one confirmed `delete_file` call of `safe_ops::SafeOps`, end to end as
//!   in the `delete_file` bench, with and without an audit log (SQLite under /dev/shm).
//!   Each measured call waits until its records are written (`Guard::audit_settled`), on
//!   both sides, so the ratio prices the writes themselves (the confirmation, committed
//!   before the effect runs, and the outcome).
//!
//! Run with `cargo bench -p guard-tests --bench audit`.

use std::{
    path::Path,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

mod harness;

use criterion::{
    BatchSize, Criterion, Throughput, criterion_group, criterion_main,
    measurement::{Measurement, ValueFormatter, WallTime},
};
use harness::{Side, scratch_dir};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::{
    Exposure, Guard,
    audit::{
        AuditLog, Checkpoint, Event, Item,
        merkle::{Hash, leaf_hash, root},
        verify, verify_export,
    },
    ops::SqliteStore,
};
use safe_ops::SafeOps;
use serde_json::json;

const RECORDS: usize = 200_000;

/// A log of `n` records like the ones guard writes, with its entries, hashes and head.
fn generated(n: usize) -> (Vec<String>, Vec<Hash>, Checkpoint) {
    let mut entries = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    let mut prev = [0u8; 32];
    for i in 0..n {
        let event = Event::new("delete_file", Outcome::Executed, format!("{i:032x}"))
            .identity("tenant_demo", "alice")
            .field("target", format!("logs/f{i:09}.log"))
            .field("preview", format!("Delete logs/f{i:09}.log (54 bytes)"))
            .field("answer", json!({"confirm": true, "reason": "[redacted]"}))
            .field("protocol", "push")
            .digest("args_sha256", &json!({"path": i}))
            .digest("result_sha256", &json!({"deleted": i}));
        let entry = event.entry(i as u64, &prev, 1_764_000_000_000 + i as i64);
        prev = leaf_hash(entry.as_bytes());
        entries.push(entry);
        hashes.push(prev);
    }
    let checkpoint = Checkpoint {
        origin: "bench".into(),
        size: n as u64,
        root: root(&hashes),
    };
    (entries, hashes, checkpoint)
}

/// The measuring thread's CPU time, in nanoseconds like criterion's wall clock.
struct ThreadCpu;

/// The wall clock's formatter, which prints nanoseconds and throughputs alike.
static NANOS: WallTime = WallTime;

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl Measurement for ThreadCpu {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu()
    }

    fn end(&self, started: Duration) -> Duration {
        thread_cpu() - started
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        NANOS.formatter()
    }
}

fn audit_verify(c: &mut Criterion<ThreadCpu>) {
    let (entries, hashes, checkpoint) = generated(RECORDS);
    let items: Vec<Item<'_>> = entries
        .iter()
        .zip(&hashes)
        .map(|(entry, hash)| Item {
            hash: Some(*hash),
            entry: entry.as_bytes(),
        })
        .collect();
    let mut export = String::new();
    for (entry, hash) in entries.iter().zip(&hashes) {
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        export.push_str(&format!("{{\"hash\":\"{hex}\",{}\n", &entry[1..]));
    }
    assert_eq!(
        verify(&items, Some(&checkpoint)).expect("verifies").records,
        RECORDS as u64
    );
    let mut group = c.benchmark_group("audit_verify");
    group
        .throughput(Throughput::Elements(RECORDS as u64))
        .sample_size(20)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("records", |b| {
        b.iter(|| verify(&items, Some(&checkpoint)).expect("verifies"))
    });
    group.bench_function("export", |b| {
        b.iter(|| verify_export(export.as_bytes(), Some(&checkpoint)).expect("verifies"))
    });
    group.finish();
}

/// A side of `audit_write`: safe-ops with or without a log, whose measured call lasts
/// until its records are written.
struct Audited {
    side: Side,
    guard: Arc<Guard>,
}

impl Audited {
    async fn connect(dir: &Path, name: &str, audit: Option<AuditLog>) -> Audited {
        let root = dir.join(name);
        let mut guard = Guard::ephemeral()
            .expect("guard key")
            .with_exposure(Exposure::all_tools());
        if let Some(log) = audit {
            guard = guard.with_audit(log);
        }
        let server =
            SafeOps::open(&root, &dir.join(format!("{name}.db")), guard).expect("safe-ops opens");
        let guard = server.guard_config().clone();
        Audited {
            side: Side::connect(server, root).await,
            guard,
        }
    }

    /// Measured: the call, then until its audit records are written.
    async fn delete(&self, name: String) {
        self.side.delete(name).await;
        self.guard.audit_settled().await;
    }
}

fn audit_write(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = scratch_dir();
    let log = AuditLog::new(
        SqliteStore::open(dir.path().join("audit.db")).expect("audit store"),
        "bench",
    );
    let (plain, audited) = rt.block_on(async {
        (
            Audited::connect(dir.path(), "plain", None).await,
            Audited::connect(dir.path(), "audit", Some(log.clone())).await,
        )
    });
    let mut group = c.benchmark_group("audit_write");
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(3))
        .measurement_time(Duration::from_secs(15));
    for (name, side) in [("without_log", &plain), ("with_log", &audited)] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_batched(
                || side.side.prepare(),
                |f| side.delete(f),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    let written = rt.block_on(log.verify(None)).expect("the log verifies");
    assert_eq!(
        written.records,
        2 * audited.side.next.load(Ordering::Relaxed),
        "two records per audited call: its confirmation, then its outcome"
    );
}

criterion_group! {
    name = verify_benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = audit_verify
}
criterion_group!(write_benches, audit_write);
criterion_main!(verify_benches, write_benches);
