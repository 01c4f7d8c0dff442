//! Shared helpers for the in-process tests: a throwaway safe-ops world (sandbox directory and
//! SQLite database), an in-process client over `tokio::io::duplex`, and readers for what a
//! tool result carries.

pub mod approval;
pub mod deferred;
pub mod events;
pub mod external;
pub mod orders;
pub mod over_http;
pub mod shelf;
pub mod stdio;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ElicitRequestParams,
        ElicitResult, ProtocolVersion,
    },
    service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService},
};
use rmcp_guard::{
    EnvIdentity, Guard,
    ops::{Operations, SqliteStore},
    outcome::Outcome,
};
use rmcp_guard_test::testing::ScriptedHuman;
use safe_ops::{SafeOps, db};
use serde_json::Value;
use tempfile::TempDir;

/// `user` of tenant `local`, as a stdio server's environment names the caller.
pub fn local_identity(user: &str) -> EnvIdentity {
    let user = user.to_owned();
    EnvIdentity::from_lookup(move |name| match name {
        EnvIdentity::TENANT_ENV => Some("local".to_owned()),
        EnvIdentity::USER_ENV => Some(user.clone()),
        _ => Some(String::new()),
    })
    .expect("identity")
}

/// A guard keeping its operations (undo windows, grants, the audit log) in `store`, calls
/// made by `user` of tenant `local`.
pub fn operations_guard(store: SqliteStore, user: &str) -> Guard {
    Guard::ephemeral()
        .expect("guard key")
        .with_operations(Operations::new(store, local_identity(user)))
}

/// Push elicitation (`elicitation/create`).
pub const PUSH: ProtocolVersion = ProtocolVersion::V_2025_11_25;
/// Multi round-trip requests (`InputRequiredResult` + sealed `requestState`).
pub const MRTR: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// Runs each listed `async fn name(era: ProtocolVersion)` once per protocol era; after
/// `threaded:`, on two worker threads (a test whose page or browser runs beside the call).
macro_rules! both_eras {
    (threaded: $($name:ident),* $(,)?) => {
        both_eras!(@on (flavor = "multi_thread", worker_threads = 2) $($name),*);
    };
    ($($name:ident),* $(,)?) => {
        both_eras!(@on () $($name),*);
    };
    (@on $flavor:tt $($name:ident),*) => {
        mod push {
            $(
                #[tokio::test $flavor]
                async fn $name() {
                    super::$name(crate::support::PUSH).await;
                }
            )*
        }
        mod mrtr {
            $(
                #[tokio::test $flavor]
                async fn $name() {
                    super::$name(crate::support::MRTR).await;
                }
            )*
        }
    };
}

/// Runs each listed `async fn name(engine: Engine)` once per store (SQLite, PostgreSQL).
macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(crate::support::orders::Engine::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(crate::support::orders::Engine::Postgres).await;
                }
            )*
        }
    };
}

pub const OLD_LOG: &str = "rotated log lines\n";
pub const REPORT: &str = "id,total\n1,1999\n";
pub const OUTSIDE: &str = "not yours\n";

/// A fresh sandbox root with two files, a file outside the root, and a seeded database.
pub struct World {
    _dir: TempDir,
    pub base: PathBuf,
    pub root: PathBuf,
    pub db: PathBuf,
    pub outside: PathBuf,
}

impl World {
    pub fn new() -> Self {
        events::install();
        let dir = tempfile::tempdir().expect("temp dir");
        let base = dir.path().canonicalize().expect("canonical temp dir");
        let root = base.join("files");
        std::fs::create_dir_all(&root).expect("sandbox root");
        std::fs::write(root.join("old.log"), OLD_LOG).expect("old.log");
        std::fs::write(root.join("report.csv"), REPORT).expect("report.csv");
        let outside = base.join("outside.txt");
        std::fs::write(&outside, OUTSIDE).expect("outside file");
        let db = base.join("safe-ops.db");
        drop(db::open(&db).expect("seeded database"));
        Self {
            _dir: dir,
            base,
            root,
            db,
            outside,
        }
    }

    /// The safe-ops server on this world, with a fresh random key.
    pub fn server(&self) -> SafeOps {
        self.server_with(Guard::ephemeral().expect("guard key"))
    }

    /// The safe-ops server on this world, serving its download links on a free loopback
    /// port, and the links (their key is the endpoint's).
    pub async fn server_with_downloads(&self) -> (SafeOps, safe_ops::downloads::Links) {
        let server = self.server();
        let links = safe_ops::downloads::serve(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            server.sandbox().clone(),
        )
        .await
        .expect("the download endpoint listens");
        (server.with_downloads(links.clone()), links)
    }

    pub fn server_with(&self, guard: Guard) -> SafeOps {
        SafeOps::open(&self.root, &self.db, guard).expect("safe-ops opens")
    }

    /// The world's operation store, opened once per process: the servers of one test share
    /// it, as the tools of one process do.
    pub fn operations_store(&self) -> SqliteStore {
        static OPEN: std::sync::LazyLock<Mutex<Vec<(PathBuf, SqliteStore)>>> =
            std::sync::LazyLock::new(Default::default);
        let path = self.base.join("operations.db");
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, store)) = open.iter().find(|(p, _)| *p == path) {
            return store.clone();
        }
        let store = SqliteStore::open(&path).expect("operation store");
        open.push((path, store.clone()));
        store
    }

    /// A path inside the sandbox root.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The bytes of a sandbox file, or `None` if it is gone.
    pub fn file(&self, name: &str) -> Option<String> {
        read(&self.root.join(name))
    }

    fn conn(&self) -> rusqlite::Connection {
        rusqlite::Connection::open_with_flags(&self.db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("read-only database connection")
    }

    /// Row count of `table`, or `None` if it is not in `sqlite_master`.
    pub fn rows(&self, table: &str) -> Option<i64> {
        db::table_rows(&self.conn(), table).expect("row count")
    }

    /// The user tables, sorted.
    pub fn tables(&self) -> Vec<String> {
        db::tables(&self.conn()).expect("tables")
    }

    /// Every deployment row: (service, approval_level, rollback_plan).
    pub fn deployments(&self) -> Vec<(String, String, String)> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT service, approval_level, rollback_plan FROM deployments ORDER BY id")
            .expect("deployments query");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("deployments rows")
            .collect::<Result<_, _>>()
            .expect("deployment row")
    }
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

/// The contents of a file, or `None` if it does not exist.
pub fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Serves `server` in process and connects `human` to it as the client.
pub async fn connect<S: rmcp::ServerHandler, H: ClientHandler>(
    server: S,
    human: H,
) -> RunningService<RoleClient, H> {
    events::install();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    // From 2026-07-28 on there is no `initialize`: the client must open with
    // `server/discover`, or the session silently falls back to 2025-11-25.
    let protocol = human.get_info().protocol_version;
    let client = if protocol.has_initialize() {
        human.serve(client_io).await
    } else {
        human
            .serve_with_lifecycle(
                client_io,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![protocol.clone()],
                },
            )
            .await
    }
    .expect("client connects");
    let negotiated = client.peer_info().map(|info| info.protocol_version.clone());
    assert_eq!(
        negotiated,
        Some(protocol),
        "the session speaks the era under test"
    );
    client
}

pub fn params(tool: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = args else {
        panic!("tool arguments must be a JSON object, got {args}");
    };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)
}

/// Calls `tool`, driving MRTR rounds through the client's handler when the era uses them.
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    client
        .call_tool(params(tool, args))
        .await
        .unwrap_or_else(|e| panic!("{tool} call failed at the protocol level: {e}"))
}

/// One `tools/call` round, without driving MRTR.
pub async fn call_once<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    params: CallToolRequestParams,
) -> CallToolResponse {
    client
        .call_tool_once(params)
        .await
        .unwrap_or_else(|e| panic!("tools/call failed at the protocol level: {e}"))
}

/// The final result of one round; panics on an `InputRequiredResult`.
pub fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a final result, got {other:?}"),
    }
}

/// The text blocks of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// The stable error code a refusal starts with (`[CODE] ...`).
pub fn code(result: &CallToolResult) -> Option<String> {
    let text = text(result);
    let rest = text.strip_prefix('[')?;
    rest.split_once(']').map(|(code, _)| code.to_owned())
}

/// The outcome `_meta.guard` names, read into guard's [`Outcome`]; `None` when the result
/// carries no tag or the tag names no outcome guard writes.
pub fn outcome(result: &CallToolResult) -> Option<Outcome> {
    Outcome::of(result)
}

/// `_meta.guard.traceId`.
pub fn trace_id(result: &CallToolResult) -> Option<String> {
    guard_meta(result)?
        .get("traceId")?
        .as_str()
        .map(str::to_owned)
}

fn guard_meta(result: &CallToolResult) -> Option<&Value> {
    result.meta.as_ref()?.0.get("guard")
}

/// Asserts a refusal: `isError`, the given code and outcome.
#[track_caller]
pub fn assert_refused(
    result: &CallToolResult,
    expected_code: rmcp_guard::Code,
    expected_outcome: Outcome,
) {
    assert!(
        is_error(result),
        "expected isError, got {result:?} ({})",
        text(result)
    );
    assert_eq!(
        code(result).as_deref(),
        Some(expected_code.as_str()),
        "text: {}",
        text(result)
    );
    assert_eq!(outcome(result), Some(expected_outcome));
}

/// Asserts a natural (non-error) result with the given outcome.
#[track_caller]
pub fn assert_natural(result: &CallToolResult, expected_outcome: Outcome) {
    assert_ne!(
        result.is_error,
        Some(true),
        "expected a natural result, got isError: {}",
        text(result)
    );
    assert_eq!(
        outcome(result),
        Some(expected_outcome),
        "text: {}",
        text(result)
    );
    assert!(
        !text(result).starts_with('['),
        "a natural result carries no error code: {}",
        text(result)
    );
}

type Hook = Arc<dyn Fn() + Send + Sync>;

/// A [`ScriptedHuman`] that also records the wire order of each form's properties and can
/// run a side effect (the world changing) while the human is looking at the form.
#[derive(Clone)]
pub struct Observer {
    pub human: ScriptedHuman,
    orders: Arc<Mutex<Vec<Vec<String>>>>,
    while_asked: Option<Hook>,
}

impl Observer {
    pub fn new(human: ScriptedHuman) -> Self {
        Self {
            human,
            orders: Arc::default(),
            while_asked: None,
        }
    }

    /// Runs `hook` after the form is shown and before the answer is sent.
    pub fn while_asked(mut self, hook: impl Fn() + Send + Sync + 'static) -> Self {
        self.while_asked = Some(Arc::new(hook));
        self
    }

    /// For each form shown: property names in the order they arrived on the wire.
    pub fn property_orders(&self) -> Vec<Vec<String>> {
        self.orders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ClientHandler for Observer {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = &request
        {
            // Deserialising the wire schema records its key order.
            let order = requested_schema.property_order.clone().unwrap_or_default();
            self.orders
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(order);
        }
        if let Some(hook) = &self.while_asked {
            hook();
        }
        self.human.create_elicitation(request, context).await
    }

    fn get_info(&self) -> ClientConfig {
        self.human.get_info()
    }
}

/// The names `tools/list` shows, sorted.
pub async fn tool_names<H: ClientHandler>(client: &RunningService<RoleClient, H>) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list answers")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    names
}

/// The JSON-RPC error of a `tools/call`; panics if the call succeeded.
pub async fn call_error<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
) -> ErrorData {
    match client.call_tool(params(tool, args)).await {
        Err(rmcp::ServiceError::McpError(error)) => error,
        Ok(result) => panic!("{tool}: expected a JSON-RPC error, got a result: {result:?}"),
        Err(other) => panic!("{tool}: expected a JSON-RPC error, got {other}"),
    }
}
