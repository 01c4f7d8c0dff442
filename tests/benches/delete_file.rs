//! What guard costs on the hot path: one confirmed `delete_file` call, end to end.
//!
//! Both sides run in process over `tokio::io::duplex`, speak protocol 2025-11-25 (push
//! `elicitation/create`) and are driven by the same client, a `ScriptedHuman` that ticks
//! the box. Each iteration deletes a freshly written file; writing it happens in the
//! (unmeasured) batch setup, identically for both sides.
//!
//! - `guarded`: `safe_ops::SafeOps`, whose `delete_file` is a `#[destructive]` tool (its
//!   router holds four tools and is filtered by its allowlist on every call).
//! - `guarded_one_tool`: the same guarded `delete_file` (same sandbox, form and preview) in
//!   a server with only that tool and an allowlist, so the comparison with the hand-written
//!   server prices guard alone, not the example's larger tool set.
//! - `hand_written`: a plain rmcp server below, written the way a careful author would do
//!   the same job without guard: sandboxed path resolution, an existence check, one
//!   elicitation with the same form schema, the three outcomes, the checkbox check, a
//!   re-check of the file, then the delete.
//!
//! Run with `cargo bench -p guard-tests --bench delete_file`.

use std::{
    path::{Component, Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use rmcp::{
    ErrorData, Peer, RoleClient, RoleServer, ServerHandler, ServiceError, ServiceExt,
    handler::server::wrapper::Parameters,
    model::{
        CallToolRequestParams, CallToolResult, ContentBlock, ElicitRequestParams,
        ElicitationAction, ElicitationSchema, ProtocolVersion,
    },
    service::RunningService,
    tool, tool_handler, tool_router,
};
use rmcp_guard::{
    Confirmed, Exposure, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
    testing::{Answer, ScriptedHuman},
};
use safe_ops::{SafeOps, sandbox::Sandbox, server::DeleteConfirmation};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// How long the human has to answer; guard's default, used by both sides.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// The bytes written to every file before it is deleted.
const CONTENT: &[u8] = b"rotated log lines\nrotated log lines\nrotated log lines\n";

// ---------------------------------------------------------------------------------------
// The hand-written server.
// ---------------------------------------------------------------------------------------

#[derive(Clone)]
struct HandWritten {
    /// Canonical sandbox root.
    root: PathBuf,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteFileArgs {
    /// Path of the file, relative to the sandbox root.
    path: String,
}

/// The answer to the confirmation form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Confirmation {
    #[serde(default)]
    confirm: bool,
    #[serde(default)]
    reason: Option<String>,
}

/// The same `requestedSchema` as guard's checkbox form for `delete_file`.
fn confirmation_schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .optional_bool_with("confirm", |b| {
            b.title("Confirm deletion")
                .description("I understand this cannot be undone.")
                .with_default(false)
        })
        .optional_string_with("reason", |s| {
            s.title("Reason")
                .description("Why (optional, for the audit log).")
                .max_length(500)
        })
        .build_unchecked()
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn refuse(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl HandWritten {
    fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Self {
            root: root.canonicalize()?,
        })
    }

    /// `Ok(None)` when nothing is there; `Err` when the path leaves the root or is not a
    /// regular file.
    fn resolve(&self, requested: &str) -> Result<Option<PathBuf>, String> {
        let path = Path::new(requested);
        if requested.trim().is_empty() || path.is_absolute() {
            return Err(format!("`{requested}` must be a path inside the sandbox"));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(format!("`{requested}` contains `..`"));
        }
        let joined = self.root.join(path);
        if std::fs::symlink_metadata(&joined).is_err() {
            return Ok(None);
        }
        let real = joined
            .canonicalize()
            .map_err(|e| format!("cannot resolve `{requested}`: {e}"))?;
        if !real.starts_with(&self.root) {
            return Err(format!("`{requested}` leads outside the sandbox"));
        }
        if !real.is_file() {
            return Err(format!("`{requested}` is not a regular file"));
        }
        Ok(Some(real))
    }
}

#[tool_router(server_handler)]
impl HandWritten {
    /// Delete a file inside the sandbox root. The user confirms in a form first.
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteFileArgs>,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let file = match self.resolve(&args.path) {
            Ok(Some(file)) => file,
            Ok(None) => {
                return Ok(text(format!(
                    "File not found, nothing to delete: {}",
                    args.path
                )));
            }
            Err(reason) => return Ok(refuse(reason)),
        };
        let Ok(before) = std::fs::metadata(&file) else {
            return Ok(text(format!(
                "File not found, nothing to delete: {}",
                args.path
            )));
        };
        let question = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "Delete file {} ({} bytes). This cannot be undone.",
                file.display(),
                before.len()
            ),
            requested_schema: confirmation_schema(),
        };
        let answer = match peer
            .create_elicitation_with_timeout(question, Some(ANSWER_TIMEOUT))
            .await
        {
            Ok(answer) => answer,
            Err(ServiceError::Timeout { .. }) => {
                return Ok(text("The confirmation was cancelled; nothing was deleted."));
            }
            Err(error) => {
                return Ok(refuse(format!(
                    "Nothing was deleted: the confirmation could not reach the user ({error})."
                )));
            }
        };
        match answer.action {
            ElicitationAction::Accept => {}
            ElicitationAction::Decline => {
                return Ok(text("The user declined; nothing was deleted."));
            }
            _ => {
                return Ok(text("The confirmation was cancelled; nothing was deleted."));
            }
        }
        let form: Confirmation = match answer.content.map(serde_json::from_value) {
            Some(Ok(form)) => form,
            _ => return Ok(refuse("Nothing was deleted: the form answer is invalid.")),
        };
        if !form.confirm {
            return Ok(refuse(
                "Nothing was deleted: the confirmation box was not ticked.",
            ));
        }
        if form
            .reason
            .as_ref()
            .is_some_and(|r| r.chars().count() > 500)
        {
            return Ok(refuse(
                "Nothing was deleted: the reason is longer than 500 characters.",
            ));
        }
        // The file must still be the one the user confirmed.
        match std::fs::symlink_metadata(&file) {
            Ok(now)
                if now.is_file()
                    && now.len() == before.len()
                    && now.modified().ok() == before.modified().ok() => {}
            _ => {
                return Ok(refuse(format!(
                    "{} changed after the user confirmed; nothing was deleted.",
                    args.path
                )));
            }
        }
        if let Err(error) = std::fs::remove_file(&file) {
            return Ok(refuse(format!("Could not delete {}: {error}", args.path)));
        }
        let reason = form
            .reason
            .map(|r| format!(" Reason: {r}."))
            .unwrap_or_default();
        Ok(text(format!("Deleted {}.{reason}", args.path)))
    }
}

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
    /// Path of the file, relative to the sandbox root.
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

#[tool_handler(router = exposed(self, Self::tool_router()))]
impl ServerHandler for GuardedOne {}

// ---------------------------------------------------------------------------------------
// The harness: one connection per side, one fresh file per iteration.
// ---------------------------------------------------------------------------------------

/// A scratch directory in memory when the system has one: on a disk file system, creating
/// and deleting tens of thousands of files makes the kernel's inode allocation (the unmeasured
/// setup) slow and noisy enough to disturb the measured calls.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("temp dir")
}

type Client = RunningService<RoleClient, ScriptedHuman>;

struct Side {
    root: PathBuf,
    human: ScriptedHuman,
    client: Client,
    next: AtomicU64,
}

impl Side {
    async fn connect<S>(server: S, root: PathBuf) -> Side
    where
        S: rmcp::ServerHandler,
    {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let human = ScriptedHuman::new(ProtocolVersion::V_2025_11_25);
        let client = human
            .clone()
            .serve(client_io)
            .await
            .expect("the client connects");
        Side {
            root,
            human,
            client,
            next: AtomicU64::new(0),
        }
    }

    /// Unmeasured: writes a fresh file and queues the human's "yes".
    fn prepare(&self) -> String {
        let name = format!("f{:09}.log", self.next.fetch_add(1, Ordering::Relaxed));
        std::fs::write(self.root.join(&name), CONTENT).expect("write the file");
        self.human.will(Answer::Accept(json!({"confirm": true})));
        name
    }

    /// Measured: one `tools/call`, checked to have deleted the file.
    async fn delete(&self, name: String) {
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), Value::String(name));
        let result = self
            .client
            .call_tool(CallToolRequestParams::new("delete_file").with_arguments(arguments))
            .await
            .expect("the call completes");
        let said = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str())
            .unwrap_or_default();
        assert!(
            result.is_error != Some(true) && said.starts_with("Deleted "),
            "the call did not delete the file: {said}"
        );
    }
}

fn delete_file(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = scratch_dir();
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

    let mut group = c.benchmark_group("delete_file");
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(3))
        .measurement_time(Duration::from_secs(20));
    let sides = [
        ("guarded", &guarded),
        ("guarded_one_tool", &one),
        ("hand_written", &written),
    ];
    for (name, side) in sides {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_batched(
                || side.prepare(),
                |file| side.delete(file),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();

    for (name, side) in sides {
        let left = std::fs::read_dir(&side.root).expect("read sandbox").count();
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
    // rmcp's generated `call_tool` rebuilds the tool router on every call; `get_tool` does
    // the same work, so it prices that rebuild for each server's tool set.
    group.bench_function("router_rebuild/safe_ops_4_tools", |b| {
        b.iter(|| safe_ops.get_tool("delete_file"))
    });
    group.bench_function("router_rebuild/hand_written_1_tool", |b| {
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
            let object =
                rmcp_guard::validate(DeleteConfirmation::SPEC, Some(&answer)).expect("valid");
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
