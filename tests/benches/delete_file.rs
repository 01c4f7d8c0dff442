//! What guard costs on the hot path: one confirmed `delete_file` call, end to end.
//!
//! All sides run in process over `tokio::io::duplex`, speak protocol 2025-11-25 (push
//! `elicitation/create`) and are driven by the same client, a `ScriptedHuman` that ticks
//! the box. Each call deletes a freshly written file; writing it happens before the call's
//! clock starts, identically for every side. The process logs exactly as the safe-ops binary
//! does (`safe_ops::logging`: its filter, its writer thread), to a file.
//!
//! The sides take turns in rounds (the side going first rotates), and the ratios of their
//! median round's mean call time are printed as `RATIO` lines; a ratio compares sides of
//! one run only.
//!
//! - `guarded`: `safe_ops::SafeOps`, whose `delete_file` is a `#[destructive]` tool (its
//!   router holds four tools, filtered by its allowlist once and shared by every call).
//! - `guarded_one_tool`: the same guarded `delete_file` (same sandbox, form and preview) in
//!   a server with only that tool and an allowlist, so the comparison with the hand-written
//!   server prices guard alone, not the example's larger tool set.
//! - `hand_written`: the plain rmcp server of `bench/hand-written` (the end-to-end bench's
//!   baseline too), written the way a careful author would do the same job without guard:
//!   sandboxed path resolution, an existence check, one elicitation with the same form
//!   schema, the three outcomes, the checkbox check, a re-check of the file, then the delete.
//!
//! Run with `cargo bench -p guard-tests --bench delete_file`.

use std::time::{Duration, Instant};

mod harness;

use criterion::{Criterion, criterion_group, criterion_main};
use hand_written_delete::{Confirmation, HandWritten, confirmation_schema};
use harness::{CONTENT, Side, scratch_dir};
use rmcp::{ServerHandler, handler::server::wrapper::Parameters, tool, tool_handler};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, Exposure, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
};
use safe_ops::{SafeOps, sandbox::Sandbox, server::DeleteConfirmation};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Rounds of the interleaved measurement, and calls per side in each round.
const ROUNDS: usize = 30;
const CALLS_PER_ROUND: usize = 200;

// ---------------------------------------------------------------------------------------
// The same guarded tool in a server of its own.
// ---------------------------------------------------------------------------------------

#[derive(Clone)]
struct GuardedOne {
    sandbox: Sandbox,
    guard: std::sync::Arc<Guard>,
}

impl Guarded for GuardedOne {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
struct GuardedArgs {
    /// Path of the file, relative to the sandbox root (an absolute path beneath the root also
    /// works).
    path: String,
}

impl GuardedOne {
    /// safe-ops' own preview.
    async fn preview_delete(&self, args: &GuardedArgs) -> Result<Preview, ToolError> {
        safe_ops::server::preview_delete(&self.sandbox, &args.path)
    }
}

#[tool_router]
impl GuardedOne {
    /// Delete a file inside the sandbox root. The user confirms in a form first.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(_args): Parameters<GuardedArgs>,
        confirmed: Confirmed<DeleteConfirmation>,
    ) -> Result<String, ToolError> {
        // safe-ops' own delete: the pinned file, through the root handle.
        let removed = self.sandbox.remove(&confirmed.target().parse()?)?;
        let reason = confirmed
            .reason
            .as_deref()
            .map(|r| format!(" Reason: {r}."))
            .unwrap_or_default();
        Ok(format!("Deleted {}.{reason}", removed.path()))
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for GuardedOne {}

// ---------------------------------------------------------------------------------------
// The harness: one connection per side, one fresh file per iteration.
// ---------------------------------------------------------------------------------------

fn delete_file(_: &mut Criterion) {
    let dir = scratch_dir();
    // The server's own log setup, writing where a client would keep the server's stderr.
    let log = std::fs::File::create(dir.path().join("server.log")).expect("log file");
    let _log = safe_ops::logging::init_with(log, false, false).expect("the log starts");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    // Same-length roots, so both sides show the human messages of the same length.
    let guarded_root = dir.path().join("guarded");
    let written_root = dir.path().join("written");
    let one_root = dir.path().join("onetool");
    std::fs::create_dir_all(&written_root).expect("sandbox root");
    let allowlist = dir.path().join("allowlist.toml");
    std::fs::write(&allowlist, "tools = [\"delete_file\"]\n").expect("allowlist");
    let one = GuardedOne {
        sandbox: Sandbox::new(&one_root).expect("sandbox root"),
        guard: std::sync::Arc::new(
            Guard::ephemeral()
                .expect("guard key")
                .with_exposure(Exposure::allowlist(&allowlist)),
        ),
    };

    let guarded = SafeOps::open(
        &guarded_root,
        &dir.path().join("safe-ops.db"),
        Guard::ephemeral().expect("guard key"),
    )
    .expect("safe-ops opens");
    let written = HandWritten::new(&written_root).expect("sandbox root");

    // Both sides must put the same question to the human.
    let guard_schema = serde_json::to_value(DeleteConfirmation::SPEC.requested_schema())
        .expect("guard's schema serializes");
    let written_schema =
        serde_json::to_value(confirmation_schema()).expect("hand-written schema serializes");
    assert_eq!(guard_schema, written_schema, "both sides ask the same form");

    let one_root = one.sandbox.root().to_path_buf();
    let (guarded, one, written) = rt.block_on(async {
        (
            Side::connect(guarded, guarded_root.clone()).await,
            Side::connect(one, one_root).await,
            Side::connect(written, written_root.clone()).await,
        )
    });

    let sides = [
        ("guarded", &guarded),
        ("guarded_one_tool", &one),
        ("hand_written", &written),
    ];
    // Warm-up, then rounds in which every side makes the same number of calls, the side
    // going first rotating. Only the calls are timed, not the file writes before them.
    // Each round's mean call time, per side.
    let mut rounds: [Vec<f64>; 3] = Default::default();
    rt.block_on(async {
        for (_, side) in sides {
            for _ in 0..CALLS_PER_ROUND {
                let file = side.prepare();
                side.delete(file).await;
            }
        }
        for round in 0..ROUNDS {
            for k in 0..sides.len() {
                let s = (round + k) % sides.len();
                let side = sides[s].1;
                let mut spent = Duration::ZERO;
                for _ in 0..CALLS_PER_ROUND {
                    let file = side.prepare();
                    let started = Instant::now();
                    side.delete(file).await;
                    spent += started.elapsed();
                }
                rounds[s].push(spent.as_secs_f64() / CALLS_PER_ROUND as f64);
            }
        }
    });
    // The median round: a round a neighbour on the machine disturbed moves it little.
    let mean = |s: usize| {
        let mut means = rounds[s].clone();
        means.sort_unstable_by(f64::total_cmp);
        means[means.len() / 2]
    };
    println!(
        "delete_file, in process, accepted, {ROUNDS} interleaved rounds of {CALLS_PER_ROUND} calls a side:"
    );
    for (s, (name, _)) in sides.iter().enumerate() {
        println!(
            "  {name:<17} {:>8.1} µs a call (median round's mean)",
            mean(s) * 1e6
        );
    }
    println!(
        "  RATIO in-process guarded ÷ hand_written = {:.3}   guarded_one_tool ÷ hand_written = {:.3}",
        mean(0) / mean(2),
        mean(1) / mean(2)
    );

    for (name, side) in sides {
        // safe-ops' deletes are undoable: their files wait in the sandbox's trash.
        let left = std::fs::read_dir(&side.root)
            .expect("read sandbox")
            .filter(|e| {
                e.as_ref()
                    .map_or(true, |e| e.file_name() != rmcp_guard::sandbox::TRASH)
            })
            .count();
        assert_eq!(left, 0, "{name}: every prepared file was deleted");
    }
    rt.block_on(async {
        let _ = guarded.client.cancel().await;
        let _ = one.client.cancel().await;
        let _ = written.client.cancel().await;
    });
}

/// The pieces of one call that differ between the two sides, measured alone, to show where
/// the guarded call spends its extra time.
fn parts(c: &mut Criterion) {
    let dir = scratch_dir();
    let root = dir.path().join("parts");
    std::fs::create_dir_all(&root).expect("parts root");
    std::fs::write(root.join("keep.log"), CONTENT).expect("write the file");
    let safe_ops = SafeOps::open(
        &root,
        &dir.path().join("safe-ops.db"),
        Guard::ephemeral().expect("guard key"),
    )
    .expect("safe-ops opens");
    let written = HandWritten::new(&root).expect("sandbox root");
    let sandbox = Sandbox::new(&root).expect("sandbox");
    let answer = json!({"confirm": true});

    let mut group = c.benchmark_group("delete_file_parts");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    // rmcp's generated `call_tool` evaluates the router expression on every call, as
    // `get_tool` does: safe-ops' filtered router is built once and shared
    // (`exposed(self, Self::tool_router)`), the plain server's is rebuilt each time.
    group.bench_function("router/safe_ops_4_tools_shared", |b| {
        b.iter(|| safe_ops.get_tool("delete_file"))
    });
    group.bench_function("router/hand_written_1_tool_rebuilt", |b| {
        b.iter(|| written.get_tool("delete_file"))
    });
    // guard builds each form's schema once and clones it per call; this is the first build.
    group.bench_function("schema/guard_form_spec_first_build", |b| {
        b.iter(|| DeleteConfirmation::SPEC.requested_schema())
    });
    group.bench_function("schema/rmcp_builder", |b| b.iter(confirmation_schema));
    // safe-ops' preview: resolve in the sandbox, stat, format the summary and state.
    group.bench_function("preview/sandbox_resolve_and_stat", |b| {
        b.iter(|| {
            safe_ops::server::preview_delete(&sandbox, "keep.log").expect("inside the sandbox")
        })
    });
    group.bench_function("preview/hand_written_resolve_and_stat", |b| {
        b.iter(|| {
            let file = written
                .resolve("keep.log")
                .expect("inside the sandbox")
                .expect("keep.log exists");
            std::fs::metadata(&file).expect("stat").len()
        })
    });
    let Preview::Effect(effect) = Preview::effect(
        root.join("keep.log").display().to_string(),
        "Delete file /tmp/x/keep.log (54 bytes). This cannot be undone.",
    )
    .with_state("SystemTime { tv_sec: 1700000000, tv_nsec: 123456789 }") else {
        unreachable!("an effect was built")
    };
    group.bench_function("fingerprint/sha256_hex", |b| {
        b.iter(|| effect.fingerprint())
    });
    group.bench_function("answer/guard_validate_and_build", |b| {
        b.iter(|| {
            let object = rmcp_guard::validate::validate(DeleteConfirmation::SPEC, Some(&answer))
                .expect("valid");
            DeleteConfirmation::from_valid(object).expect("builds")
        })
    });
    group.bench_function("answer/serde_from_value", |b| {
        b.iter(|| serde_json::from_value::<Confirmation>(answer.clone()).expect("valid"))
    });
    group.finish();
}

criterion_group!(benches, delete_file, parts);
criterion_main!(benches);
