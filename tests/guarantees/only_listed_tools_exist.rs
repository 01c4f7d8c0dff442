//! Which tools exist at all: the allowlist fails closed, a tool that is not listed answers
//! exactly like a name that never existed, reloads reach the client as
//! `notifications/tools/list_changed`, and the environment switches are read safely.
//! In process against `safe_ops::SafeOps` and a server defined here, and over stdio against
//! the `safe-ops` binary (SIGHUP, logs, environment).

use crate::support;

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::Duration,
};

use crate::support::{stdio::StdioServer, *};
use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServerHandler, ServiceExt,
    handler::server::wrapper::Parameters,
    model::{
        ClientConfig, ElicitRequestParams, ElicitResult, ErrorCode, ProtocolVersion,
        ServerCapabilities, ServerConfig,
    },
    service::{NotificationContext, RequestContext, RunningService},
    tool, tool_handler,
};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::tool_router;
use rmcp_guard::{Exposure, Guard, Guarded, exposed, idempotent, read_only};
use rmcp_guard_test::testing::ScriptedHuman;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The four tools safe-ops defines, with arguments that would be valid for each.
fn safe_ops_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("delete_file", json!({"path": "old.log"})),
        ("drop_table", json!({"table": "orders"})),
        ("deploy", json!({"service": "billing"})),
        ("list_tables", json!({})),
    ]
}

const ALL_TOOLS: &str = "tools = [\"delete_file\", \"drop_table\", \"deploy\", \"list_tables\"]\n";

/// Writes `text` to `path` atomically (a reader never sees half a file).
fn write_file(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp-write");
    std::fs::write(&tmp, text).expect("write allowlist");
    std::fs::rename(&tmp, path).expect("rename allowlist into place");
}

fn guard_with(exposure: Exposure) -> Guard {
    Guard::ephemeral()
        .expect("guard key")
        .with_exposure(exposure)
}

/// Asserts that calling `tool` fails exactly as calling a name that never existed.
#[track_caller]
fn assert_same_as_unknown(tool: &str, hidden: &ErrorData, unknown: &ErrorData) {
    assert_eq!(hidden.code, ErrorCode::INVALID_PARAMS, "{tool}: {hidden:?}");
    assert_eq!(
        (&hidden.code, &hidden.message, &hidden.data),
        (&unknown.code, &unknown.message, &unknown.data),
        "{tool} must be indistinguishable from an unknown tool"
    );
}

async fn assert_nothing_callable<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    label: &str,
) {
    let unknown = call_error(client, "no_such_tool", json!({})).await;
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS, "{label}");
    for (tool, args) in safe_ops_calls() {
        let hidden = call_error(client, tool, args).await;
        assert_same_as_unknown(&format!("{label}: {tool}"), &hidden, &unknown);
    }
}

// ---------------------------------------------------------------------------------------
// The allowlist in process
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn toml_allowlist_publishes_only_its_tools() {
    for era in [PUSH, MRTR] {
        let world = World::new();
        let list = world.base.join("allowlist.toml");
        std::fs::write(&list, "tools = [\"list_tables\", \"deploy\"]\n").unwrap();
        let server = world.server_with(guard_with(Exposure::allowlist(&list)));
        let client = connect(server, ScriptedHuman::new(era.clone())).await;
        assert_eq!(
            tool_names(&client).await,
            ["deploy", "list_tables"],
            "{era:?}"
        );
        let listed = call(&client, "list_tables", json!({})).await;
        assert!(!is_error(&listed), "{}", text(&listed));
        assert!(
            text(&listed).contains("orders: 4 rows"),
            "{}",
            text(&listed)
        );
    }
}

#[tokio::test]
async fn json_allowlist_publishes_only_its_tools() {
    for era in [PUSH, MRTR] {
        let world = World::new();
        let list = world.base.join("allowlist.json");
        std::fs::write(&list, r#"{"tools": ["drop_table"]}"#).unwrap();
        let server = world.server_with(guard_with(Exposure::allowlist(&list)));
        let client = connect(server, ScriptedHuman::new(era.clone())).await;
        assert_eq!(tool_names(&client).await, ["drop_table"], "{era:?}");
    }
}

#[tokio::test]
async fn a_hidden_tool_answers_exactly_like_a_name_that_never_existed() {
    for era in [PUSH, MRTR] {
        let world = World::new();
        let list = world.base.join("allowlist.toml");
        std::fs::write(&list, "tools = [\"list_tables\"]\n").unwrap();
        let human = ScriptedHuman::new(era.clone());
        // Had the human been asked, this answer would have let the deletion run.
        human.will(rmcp_guard_test::testing::Answer::Accept(
            json!({"confirm": true}),
        ));
        let server = world.server_with(guard_with(Exposure::allowlist(&list)));
        let client = connect(server, human.clone()).await;
        let unknown = call_error(&client, "no_such_tool", json!({"path": "old.log"})).await;
        assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(unknown.code.0, -32602);
        for (tool, args) in safe_ops_calls() {
            if tool == "list_tables" {
                continue;
            }
            let hidden = call_error(&client, tool, args).await;
            assert_same_as_unknown(tool, &hidden, &unknown);
        }
        // Same arguments, same answer: the name alone decides, nothing leaks.
        let hidden = call_error(&client, "delete_file", json!({"path": "old.log"})).await;
        assert_same_as_unknown("delete_file", &hidden, &unknown);
        assert!(
            human.shown().is_empty(),
            "nobody is asked about a hidden tool"
        );
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
        assert_eq!(world.rows("orders"), Some(4));
        assert!(world.deployments().is_empty());
    }
}

/// Every way an allowlist can be wrong. Each enables no tool at all.
fn broken_allowlists(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let directory = dir.join("a-directory.toml");
    std::fs::create_dir_all(&directory).unwrap();
    vec![
        ("missing file", dir.join("missing.toml")),
        ("a directory, not a file", directory),
        (
            "bad TOML syntax",
            file("syntax.toml", "tools = [\"list_tables\""),
        ),
        ("bad JSON syntax", file("syntax.json", "{\"tools\": [")),
        (
            "unknown tool name",
            file(
                "unknown.toml",
                "tools = [\"list_tables\", \"drop_tables\"]\n",
            ),
        ),
        (
            "duplicate name",
            file("dup.json", r#"{"tools": ["list_tables", "list_tables"]}"#),
        ),
        (
            "unknown key",
            file("key.toml", "tools = [\"list_tables\"]\nread_only = false\n"),
        ),
        (
            "misspelt key",
            file("tool.toml", "tool = [\"list_tables\"]\n"),
        ),
        (
            "wrong type",
            file("type.json", r#"{"tools": "list_tables"}"#),
        ),
        (
            "wrong extension",
            file("allowlist.yaml", "tools: [list_tables]\n"),
        ),
        ("no extension", file("allowlist", ALL_TOOLS)),
        ("empty file", file("empty.toml", "")),
    ]
}

#[tokio::test]
async fn every_broken_allowlist_enables_nothing_and_the_server_still_answers() {
    let world = World::new();
    let dir = world.base.join("lists");
    std::fs::create_dir_all(&dir).unwrap();
    for (label, path) in broken_allowlists(&dir) {
        let existed = path.exists();
        let server = world.server_with(guard_with(Exposure::allowlist(&path)));
        let client = connect(server, ScriptedHuman::new(PUSH)).await;
        assert!(tool_names(&client).await.is_empty(), "{label}");
        assert_nothing_callable(&client, label).await;
        // Still serving: a second listing answers, still empty.
        assert!(tool_names(&client).await.is_empty(), "{label}");
        assert_eq!(
            path.exists(),
            existed,
            "{label}: the allowlist is never created"
        );
    }
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    assert_eq!(world.rows("orders"), Some(4));
}

#[tokio::test]
async fn an_unreadable_allowlist_enables_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new();
    let path = world.base.join("locked.toml");
    std::fs::write(&path, ALL_TOOLS).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read_to_string(&path).is_ok() {
        eprintln!(
            "SKIPPED an_unreadable_allowlist_enables_nothing: this user (root?) reads a mode-000 \
             file anyway; the unreadable case is covered by the directory path in \
             every_broken_allowlist_enables_nothing_and_the_server_still_answers"
        );
        return;
    }
    let server = world.server_with(guard_with(Exposure::allowlist(&path)));
    let client = connect(server, ScriptedHuman::new(PUSH)).await;
    assert!(tool_names(&client).await.is_empty());
    assert_nothing_callable(&client, "mode 000").await;
}

#[tokio::test]
async fn an_empty_list_is_valid_and_enables_nothing() {
    let world = World::new();
    let list = world.base.join("allowlist.json");
    std::fs::write(&list, r#"{"tools": []}"#).unwrap();
    let server = world.server_with(guard_with(Exposure::allowlist(&list)));
    let client = connect(server, ScriptedHuman::new(PUSH)).await;
    assert!(tool_names(&client).await.is_empty());
    assert_nothing_callable(&client, "tools = []").await;
}

// ---------------------------------------------------------------------------------------
// A tool added in code stays off until it is listed
// ---------------------------------------------------------------------------------------

#[derive(Clone)]
struct Shop {
    guard: Arc<Guard>,
}

impl Guarded for Shop {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema)]
struct OrderId {
    id: i64,
}

#[tool_router]
impl Shop {
    /// Count the orders.
    #[read_only]
    #[tool]
    async fn count_orders(&self) -> String {
        "4 orders".into()
    }

    /// Cancel a test order (only test orders, only its status). Added after the allowlist
    /// was written.
    #[idempotent]
    #[tool]
    async fn cancel_test_order(&self, Parameters(args): Parameters<OrderId>) -> String {
        format!("test order {} cancelled", args.id)
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

async fn connect_shop(
    exposure: Exposure,
) -> (Arc<Exposure>, RunningService<RoleClient, ScriptedHuman>) {
    support::events::install();
    let shop = Shop {
        guard: Arc::new(guard_with(exposure)),
    };
    let exposure = shop.guard.exposure().cloned().expect("exposure set");
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = shop.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ScriptedHuman::new(PUSH)
        .connect(client_io)
        .await
        .expect("client connects");
    (exposure, client)
}

#[tokio::test]
async fn a_tool_added_in_code_stays_off_until_listed() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    std::fs::write(&list, "tools = [\"count_orders\"]\n").unwrap();
    let (exposure, client) = connect_shop(Exposure::allowlist(&list)).await;
    assert_eq!(tool_names(&client).await, ["count_orders"]);
    let unknown = call_error(&client, "no_such_tool", json!({"id": 7})).await;
    let hidden = call_error(&client, "cancel_test_order", json!({"id": 7})).await;
    assert_same_as_unknown("cancel_test_order", &hidden, &unknown);

    write_file(&list, "tools = [\"count_orders\", \"cancel_test_order\"]\n");
    assert!(exposure.reload(false), "listing the tool changes the set");
    assert_eq!(
        tool_names(&client).await,
        ["cancel_test_order", "count_orders"]
    );
    let result = call(&client, "cancel_test_order", json!({"id": 7})).await;
    assert_eq!(text(&result), "test order 7 cancelled");
}

#[tokio::test]
async fn read_only_mode_keeps_only_read_only_tools_even_when_listed() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    std::fs::write(&list, "tools = [\"count_orders\", \"cancel_test_order\"]\n").unwrap();
    let (exposure, client) = connect_shop(Exposure::allowlist(&list).read_only(true)).await;
    assert!(exposure.is_read_only());
    assert_eq!(tool_names(&client).await, ["count_orders"]);
    let unknown = call_error(&client, "no_such_tool", json!({"id": 7})).await;
    let hidden = call_error(&client, "cancel_test_order", json!({"id": 7})).await;
    assert_same_as_unknown("cancel_test_order", &hidden, &unknown);
}

// ---------------------------------------------------------------------------------------
// Reload
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn reload_applies_a_changed_file_and_a_broken_one_closes_everything() {
    let world = World::new();
    let list = world.base.join("allowlist.toml");
    std::fs::write(&list, "tools = [\"list_tables\"]\n").unwrap();
    let server = world.server_with(guard_with(Exposure::allowlist(&list)));
    let exposure = server.guard_config().exposure().cloned().unwrap();
    let client = connect(server, ScriptedHuman::new(PUSH)).await;
    assert_eq!(tool_names(&client).await, ["list_tables"]);

    assert!(!exposure.reload(false), "an unchanged file is not re-read");
    assert!(!exposure.reload(true), "forced, the same tools: no change");

    write_file(&list, "tools = [\"list_tables\", \"drop_table\"]\n");
    assert!(exposure.reload(false));
    assert_eq!(tool_names(&client).await, ["drop_table", "list_tables"]);

    write_file(&list, "tools = [\"list_tables\", \"drop_table\"\n");
    assert!(exposure.reload(false), "a broken file is a change");
    assert!(tool_names(&client).await.is_empty());
    assert_nothing_callable(&client, "broken on reload").await;

    std::fs::remove_file(&list).unwrap();
    exposure.reload(false);
    assert!(
        tool_names(&client).await.is_empty(),
        "deleted: still nothing"
    );

    write_file(&list, "tools = [\"deploy\"]\n");
    assert!(exposure.reload(false));
    assert_eq!(tool_names(&client).await, ["deploy"]);
}

/// A client that records `notifications/tools/list_changed`.
#[derive(Clone)]
struct Watcher {
    human: ScriptedHuman,
    changed: UnboundedSender<()>,
}

impl ClientHandler for Watcher {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.human.create_elicitation(request, context).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        self.human.get_info()
    }
}

/// Serves safe-ops with its allowlist watched every `poll` and a [`Watcher`] client.
async fn connect_watched(
    world: &World,
    list: &Path,
    era: ProtocolVersion,
    poll: Duration,
) -> (RunningService<RoleClient, Watcher>, UnboundedReceiver<()>) {
    let server = world.server_with(guard_with(Exposure::allowlist(list)));
    let exposure = server.guard_config().exposure().cloned().unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            exposure.watch(Some(running.peer().clone()), poll);
            let _ = running.waiting().await;
        }
    });
    let (changed, received) = unbounded_channel();
    let watcher = Watcher {
        human: ScriptedHuman::new(era.clone()),
        changed,
    };
    let client = watcher.connect_client(client_io, era).await;
    (client, received)
}

impl Watcher {
    async fn connect_client(
        self,
        io: tokio::io::DuplexStream,
        era: ProtocolVersion,
    ) -> RunningService<RoleClient, Self> {
        use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
        if era.has_initialize() {
            self.serve(io).await
        } else {
            self.serve_with_lifecycle(
                io,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![era],
                },
            )
            .await
        }
        .expect("client connects")
    }
}

/// Waits (bounded) for the next `notifications/tools/list_changed`.
async fn next_list_changed(received: &mut UnboundedReceiver<()>, what: &str) {
    tokio::time::timeout(Duration::from_secs(30), received.recv())
        .await
        .unwrap_or_else(|_| panic!("no notifications/tools/list_changed after {what}"))
        .expect("the client is still connected");
}

#[tokio::test]
async fn the_watcher_reloads_a_changed_file_and_tells_the_client() {
    for era in [PUSH, MRTR] {
        let world = World::new();
        let list = world.base.join("allowlist.toml");
        std::fs::write(&list, "tools = [\"list_tables\"]\n").unwrap();
        let (client, mut changed) =
            connect_watched(&world, &list, era.clone(), Duration::from_millis(20)).await;
        assert_eq!(tool_names(&client).await, ["list_tables"]);

        write_file(&list, "tools = [\"list_tables\", \"delete_file\"]\n");
        next_list_changed(&mut changed, "adding delete_file").await;
        assert_eq!(tool_names(&client).await, ["delete_file", "list_tables"]);

        write_file(&list, "tools = [\"list_tables\", \"delete_file\", ]]\n");
        next_list_changed(&mut changed, "breaking the file").await;
        assert!(tool_names(&client).await.is_empty());
        assert_nothing_callable(&client, "broken while watched").await;

        write_file(&list, "tools = [\"deploy\"]\n");
        next_list_changed(&mut changed, "fixing the file").await;
        assert_eq!(tool_names(&client).await, ["deploy"]);
        assert!(
            changed.try_recv().is_err(),
            "one notification per change, none extra"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The binary over stdio: SIGHUP, the log line, the environment
// ---------------------------------------------------------------------------------------

#[test]
fn the_poll_sees_a_same_size_edit_with_the_time_restored_and_sighup_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    std::fs::write(&list, "tools = [\"deploy\"]\n").unwrap();
    let mut server = StdioServer::start(&["--allowlist", list.to_str().unwrap()], &[]);
    assert_eq!(server.tool_names(), ["deploy"]);

    // A change the poll sees (the length differs). The notification also proves the watch
    // task runs, so its SIGHUP handler is installed before any signal is sent.
    write_file(&list, "tools = [\"list_tables\"]\n");
    server.wait_notification("notifications/tools/list_changed");
    assert_eq!(server.tool_names(), ["list_tables"]);

    // Same length, same modification time: only the content tells the file changed, and
    // the poll compares content.
    let seen = std::fs::metadata(&list).unwrap();
    let tmp = dir.path().join("next.toml");
    std::fs::write(&tmp, "tools = [\"delete_file\"]\n").unwrap();
    assert_eq!(std::fs::metadata(&tmp).unwrap().len(), seen.len());
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(seen.modified().unwrap())
        .unwrap();
    std::fs::rename(&tmp, &list).unwrap();
    server.wait_notification("notifications/tools/list_changed");
    assert_eq!(server.tool_names(), ["delete_file"]);

    let status = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    assert_eq!(server.tool_names(), ["delete_file"]);
    assert!(
        server.is_running(),
        "SIGHUP reloads, it does not end the server"
    );
}

#[test]
fn a_broken_allowlist_is_logged_once_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "unknown.toml",
            "tools = [\"list_tables\", \"drop_tables\"]\n",
            "drop_tables",
        ),
        ("syntax.toml", "tools = [\"list_tables\"", "is not valid"),
        ("dup.json", r#"{"tools": ["deploy", "deploy"]}"#, "twice"),
        ("list.yaml", "tools: [deploy]\n", ".toml or .json"),
    ];
    for (name, text, reason) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let mut server = StdioServer::start(&["--allowlist", path.to_str().unwrap()], &[]);
        assert!(server.tool_names().is_empty(), "{name}");
        let unknown = server.call_error("no_such_tool", json!({}));
        assert_eq!(unknown["code"], -32602, "{name}");
        for (tool, args) in safe_ops_calls() {
            assert_eq!(server.call_error(tool, args), unknown, "{name}: {tool}");
        }
        assert!(server.tool_names().is_empty(), "{name}: still answering");
        let log = server.stop();
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("no tool is enabled"))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "{name}: one line, not one per request:\n{log}"
        );
        assert!(lines[0].contains(reason), "{name}: {}", lines[0]);
        assert!(
            lines[0].contains(path.to_str().unwrap()),
            "{name}: the line names the file: {}",
            lines[0]
        );
    }
}

#[test]
fn guard_allowlist_env_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("only-deploy.json");
    std::fs::write(&list, r#"{"tools": ["deploy"]}"#).unwrap();
    let mut server = StdioServer::start(&[], &[("GUARD_ALLOWLIST", list.to_str().unwrap())]);
    assert_eq!(server.tool_names(), ["deploy"]);
}

#[test]
fn guard_read_only_env_is_read_the_safe_way() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("all.toml");
    std::fs::write(&list, ALL_TOOLS).unwrap();
    let list = list.to_str().unwrap();
    let cases: [(&str, &[&str]); 8] = [
        ("1", &["list_tables"]),
        ("true", &["list_tables"]),
        (" On ", &["list_tables"]),
        ("yes please", &["list_tables"]),
        ("2", &["list_tables"]),
        ("0", &["delete_file", "deploy", "drop_table", "list_tables"]),
        (
            "off",
            &["delete_file", "deploy", "drop_table", "list_tables"],
        ),
        ("", &["delete_file", "deploy", "drop_table", "list_tables"]),
    ];
    for (value, expected) in cases {
        let mut server = StdioServer::start(
            &[],
            &[("GUARD_ALLOWLIST", list), ("GUARD_READ_ONLY", value)],
        );
        assert_eq!(server.tool_names(), expected, "GUARD_READ_ONLY={value:?}");
        let log = server.stop();
        let understood = ["1", "true", " On ", "0", "off", ""].contains(&value);
        assert_eq!(
            log.contains("is not understood, so read-only mode is ON"),
            !understood,
            "GUARD_READ_ONLY={value:?}: a value that is not understood is logged:\n{log}"
        );
    }
}

/// Runs one `from_env` case in a child copy of this test binary, where the environment is
/// set before the process starts (no `set_var` racing other tests' threads).
const FROM_ENV_CASE: &str = "GUARD_TESTS_FROM_ENV_CASE";

#[tokio::test]
async fn exposure_from_env_reads_guard_allowlist_and_guard_read_only() {
    if let Ok(case) = std::env::var(FROM_ENV_CASE) {
        return from_env_case(&case).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("all.toml");
    std::fs::write(&list, ALL_TOOLS).unwrap();
    let list = list.to_str().unwrap();
    let cases: [(&str, &[(&str, &str)]); 5] = [
        ("no-allowlist", &[]),
        ("no-allowlist", &[("GUARD_READ_ONLY", "0")]),
        ("no-allowlist", &[("GUARD_ALLOWLIST", "")]),
        (
            "read-only-garbled",
            &[("GUARD_ALLOWLIST", list), ("GUARD_READ_ONLY", "yes please")],
        ),
        (
            "all",
            &[("GUARD_ALLOWLIST", list), ("GUARD_READ_ONLY", "0")],
        ),
    ];
    let this_test = guard_tests::test_name(
        module_path!(),
        "exposure_from_env_reads_guard_allowlist_and_guard_read_only",
    );
    for (case, env) in cases {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                this_test.as_str(),
                "--exact",
                "--test-threads=1",
                "--nocapture",
            ])
            .env_remove("GUARD_ALLOWLIST")
            .env_remove("GUARD_READ_ONLY")
            .env(FROM_ENV_CASE, case);
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "case {case} with {env:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

async fn from_env_case(case: &str) {
    if case == "no-allowlist" {
        // Publishing nothing (or everything) by accident is not a configuration: the
        // server is told at startup, with what to set.
        let error = Exposure::from_env()
            .err()
            .expect("no allowlist is an error");
        let message = error.to_string();
        assert!(
            message.contains("GUARD_ALLOWLIST") && message.contains("Exposure::all_tools()"),
            "{message}"
        );
        return;
    }
    let exposure = Exposure::from_env().expect("an allowlist is named");
    let world = World::new();
    let expected: &[&str] = match case {
        "read-only-garbled" => {
            assert!(exposure.is_read_only(), "not understood reads as ON");
            &["list_tables"]
        }
        "all" => {
            assert!(!exposure.is_read_only());
            &["delete_file", "deploy", "drop_table", "list_tables"]
        }
        other => panic!("unknown case {other}"),
    };
    let client = connect(
        world.server_with(guard_with(exposure)),
        ScriptedHuman::new(PUSH),
    )
    .await;
    assert_eq!(tool_names(&client).await, expected, "case {case}");
    if expected.is_empty() {
        assert_nothing_callable(&client, case).await;
    }
}

// ---------------------------------------------------------------------------------------
// The allowlist reader: what is not a small regular file enables nothing, without blocking
// ---------------------------------------------------------------------------------------

/// Makes a FIFO at `path` (no writer will ever open it: a blocking read would hang).
fn make_fifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `f` on a blocking thread and fails the test if it has not returned within a
/// generous bound: a reader that blocks fails instead of hanging the suite.
async fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::time::timeout(Duration::from_secs(20), tokio::task::spawn_blocking(f))
        .await
        .unwrap_or_else(|_| panic!("{what} blocked"))
        .expect("no panic")
}

/// The tools `exposure` publishes of the shop's two.
async fn shop_tools(exposure: Exposure) -> Vec<String> {
    let (_, client) = connect_shop(exposure).await;
    tool_names(&client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_at_start_enables_nothing_and_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("allowlist.toml");
    make_fifo(&fifo);
    let path = fifo.clone();
    let exposure = bounded("reading a FIFO at start", move || Exposure::allowlist(path)).await;
    assert!(shop_tools(exposure).await.is_empty());
    // A forced reload (SIGHUP) reads it the same way.
    let path = fifo.clone();
    let reload = bounded("reloading a FIFO", move || {
        Exposure::allowlist(path).reload(true)
    })
    .await;
    assert!(!reload, "still nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_swapped_in_on_reload_closes_everything_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    std::fs::write(&list, "tools = [\"count_orders\"]\n").unwrap();
    let (exposure, client) = connect_shop(Exposure::allowlist(&list)).await;
    assert_eq!(tool_names(&client).await, ["count_orders"]);
    std::fs::remove_file(&list).unwrap();
    make_fifo(&list);
    let watched = exposure.clone();
    let changed = bounded("reloading a FIFO", move || watched.reload(false)).await;
    assert!(
        changed,
        "a FIFO is a broken allowlist: the set changes to nothing"
    );
    assert!(tool_names(&client).await.is_empty());
}

#[tokio::test]
async fn a_directory_or_a_device_enables_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("allowlist.toml");
    std::fs::create_dir(&folder).unwrap();
    assert!(shop_tools(Exposure::allowlist(&folder)).await.is_empty());
    // A character device that would answer forever if it were read.
    assert!(
        shop_tools(Exposure::allowlist("/dev/zero"))
            .await
            .is_empty(),
        "a device is not an allowlist"
    );
}

#[tokio::test]
async fn an_oversized_allowlist_enables_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    let padding = "#".repeat(usize::try_from(rmcp_guard::exposure::MAX_ALLOWLIST_BYTES).unwrap());
    std::fs::write(&list, format!("tools = [\"count_orders\"]\n{padding}\n")).unwrap();
    assert!(shop_tools(Exposure::allowlist(&list)).await.is_empty());
    // One byte under the bound, the same list is read.
    let fits = "#".repeat(
        usize::try_from(rmcp_guard::exposure::MAX_ALLOWLIST_BYTES).unwrap()
            - "tools = [\"count_orders\"]\n".len()
            - 2,
    );
    std::fs::write(&list, format!("tools = [\"count_orders\"]\n{fits}\n")).unwrap();
    assert_eq!(
        shop_tools(Exposure::allowlist(&list)).await,
        ["count_orders"]
    );
}

#[tokio::test]
async fn a_same_size_edit_with_the_time_restored_is_seen_on_the_next_poll() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    let both = "tools = [\"count_orders\", \"cancel_test_order\"]\n";
    let head = "tools = [\"count_orders\"]\n";
    let one = format!("{head}#{}\n", "-".repeat(both.len() - head.len() - 2));
    assert_eq!(one.len(), both.len());
    std::fs::write(&list, &one).unwrap();
    let (exposure, client) = connect_shop(Exposure::allowlist(&list)).await;
    assert_eq!(tool_names(&client).await, ["count_orders"]);
    let modified = std::fs::metadata(&list).unwrap().modified().unwrap();
    std::fs::write(&list, both).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&list)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let meta = std::fs::metadata(&list).unwrap();
    assert_eq!(
        (meta.modified().unwrap(), meta.len()),
        (modified, one.len() as u64),
        "time and size are as before the edit"
    );
    assert!(exposure.reload(false), "the content changed");
    assert_eq!(
        tool_names(&client).await,
        ["cancel_test_order", "count_orders"]
    );
    assert!(!exposure.reload(false), "and is not changed again");
}

// ---------------------------------------------------------------------------------------
// Stating the exposure, and auditing calls of tools that are not published
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn all_tools_is_an_explicit_choice_in_code_and_read_only_still_holds() {
    assert_eq!(
        shop_tools(Exposure::all_tools()).await,
        ["cancel_test_order", "count_orders"]
    );
    assert_eq!(
        shop_tools(Exposure::all_tools().read_only(true)).await,
        ["count_orders"]
    );
}

#[tokio::test]
async fn a_guard_that_states_no_exposure_publishes_nothing() {
    let shop = Shop {
        guard: Arc::new(Guard::ephemeral().expect("guard key")),
    };
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = shop.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ScriptedHuman::new(PUSH)
        .connect(client_io)
        .await
        .expect("client connects");
    assert!(tool_names(&client).await.is_empty());
    let hidden = call_error(&client, "count_orders", json!({})).await;
    assert_eq!(hidden.code, ErrorCode::INVALID_PARAMS);
}

/// `(tool, outcome, trace_id)` of each `guard::audit` event on this thread.
struct AuditEvents(UnboundedSender<(String, String, String)>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for AuditEvents {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields(String, String, String);
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                match field.name() {
                    "tool" => self.0 = value.to_owned(),
                    "outcome" => self.1 = value.to_owned(),
                    _ => {}
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "trace_id" {
                    self.2 = format!("{value:?}");
                }
            }
        }
        if event.metadata().target() != "guard::audit" {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let _ = self.0.send((fields.0, fields.1, fields.2));
    }
}

/// Calls of a hidden and of an unknown tool answer alike and each leave an audit event with
/// the name called, the outcome and a trace id; a published tool's call leaves neither.
#[tokio::test]
async fn hidden_and_unknown_tool_calls_are_audited() {
    let (tx, mut events) = unbounded_channel();
    let _capture = support::events::capture(AuditEvents(tx));
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    std::fs::write(&list, "tools = [\"count_orders\"]\n").unwrap();
    let (_, client) = connect_shop(Exposure::allowlist(&list)).await;

    let hidden = call_error(&client, "cancel_test_order", json!({"id": 7})).await;
    let unknown = call_error(&client, "no_such_tool\nforged line", json!({})).await;
    assert_same_as_unknown("cancel_test_order", &hidden, &unknown);
    call(&client, "count_orders", json!({})).await;

    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    let outcomes: Vec<(&str, Option<Outcome>)> = seen
        .iter()
        .map(|(tool, outcome, _)| (tool.as_str(), Outcome::parse(outcome)))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("cancel_test_order", Some(Outcome::HiddenTool)),
            ("no_such_tool?forged line", Some(Outcome::UnknownTool)),
        ],
        "{seen:?}"
    );
    for (_, _, trace_id) in &seen {
        assert!(trace_id.len() > 8, "a trace id: {seen:?}");
    }
    assert_ne!(seen[0].2, seen[1].2, "one trace id per call");
}

/// How many times [`Counted`]'s router was built.
static COUNTED_BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A server whose router function counts how often it runs.
#[derive(Clone)]
struct Counted {
    guard: Arc<Guard>,
}

impl Guarded for Counted {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router(router = routes)]
impl Counted {
    /// Count the orders.
    #[read_only]
    #[tool]
    async fn count_orders(&self) -> String {
        "4 orders".into()
    }

    /// Cancel a test order.
    #[idempotent]
    #[tool]
    async fn cancel_test_order(&self, Parameters(args): Parameters<OrderId>) -> String {
        format!("test order {} cancelled", args.id)
    }
}

impl Counted {
    fn counted_routes() -> rmcp::handler::server::router::tool::ToolRouter<Self> {
        COUNTED_BUILDS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self::routes()
    }
}

#[tool_handler(router = exposed(self, Self::counted_routes))]
impl ServerHandler for Counted {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::test]
async fn the_filtered_router_is_built_once_and_again_only_when_the_list_changes() {
    let builds = || COUNTED_BUILDS.load(std::sync::atomic::Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    std::fs::write(&list, "tools = [\"count_orders\", \"cancel_test_order\"]\n").unwrap();
    let server = Counted {
        guard: Arc::new(guard_with(Exposure::allowlist(&list))),
    };
    let exposure = server.guard.exposure().cloned().unwrap();
    let client = connect(server.clone(), ScriptedHuman::new(PUSH)).await;
    let cancel = || call(&client, "cancel_test_order", json!({"id": 7}));

    assert_eq!(text(&cancel().await), "test order 7 cancelled");
    let first = builds();
    for _ in 0..5 {
        assert_eq!(text(&cancel().await), "test order 7 cancelled");
        assert_eq!(tool_names(&client).await.len(), 2);
    }
    assert_eq!(builds(), first, "calls and lists share one filtered router");

    // The list changes: the next call sees the new list, through a router built anew.
    write_file(&list, "tools = [\"count_orders\"]\n");
    assert!(exposure.reload(false));
    let hidden = call_error(&client, "cancel_test_order", json!({"id": 7})).await;
    assert_eq!(hidden.code, ErrorCode::INVALID_PARAMS, "{hidden:?}");
    assert_eq!(tool_names(&client).await, ["count_orders"]);
    let rebuilt = builds();
    assert!(rebuilt > first, "a changed list builds the router again");

    // SIGHUP with the same content: nothing changed, the shared router stays.
    assert!(!exposure.reload(true));
    let hidden = call_error(&client, "cancel_test_order", json!({"id": 7})).await;
    assert_eq!(hidden.code, ErrorCode::INVALID_PARAMS, "{hidden:?}");
    assert_eq!(builds(), rebuilt);

    // A broken file closes everything at once, and a fixed one opens it again.
    write_file(&list, "tools = [\"count_orders\"\n");
    assert!(exposure.reload(false));
    assert!(tool_names(&client).await.is_empty());
    write_file(&list, "tools = [\"cancel_test_order\"]\n");
    assert!(exposure.reload(false));
    assert_eq!(text(&cancel().await), "test order 7 cancelled");

    // Another server with its own guard and list filters by its own list.
    let other_list = dir.path().join("other.toml");
    std::fs::write(&other_list, "tools = [\"count_orders\"]\n").unwrap();
    let other = Counted {
        guard: Arc::new(guard_with(Exposure::allowlist(&other_list))),
    };
    let other_client = connect(other, ScriptedHuman::new(PUSH)).await;
    assert_eq!(tool_names(&other_client).await, ["count_orders"]);
    assert_eq!(text(&cancel().await), "test order 7 cancelled");
}

/// A server whose author installed no tracing subscriber still says on stderr why its
/// misspelled allowlist enables nothing. The server runs in a child process of this test
/// binary (this test again, told so by its environment), which installs no subscriber.
#[test]
fn a_misspelled_allowlist_is_explained_on_stderr_without_a_subscriber() {
    const LIST: &str = "GUARD_TEST_MISSPELLED_ALLOWLIST";
    if let Some(list) = std::env::var_os(LIST) {
        // No `World`, no `connect`: they install this binary's subscriber.
        let shop = Shop {
            guard: Arc::new(guard_with(Exposure::allowlist(list))),
        };
        // The router a `tools/list` would be answered from.
        let published = exposed(&shop, Shop::tool_router);
        assert!(published.list_all().is_empty(), "nothing is published");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("allowlist.toml");
    std::fs::write(&list, "tools = [\"count_orders\", \"drop_tables\"]\n").unwrap();
    let test = "only_listed_tools_exist::a_misspelled_allowlist_is_explained_on_stderr_without_a_subscriber";
    let child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(LIST, &list)
        .output()
        .expect("the test binary runs");
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "the child ran:\n{stderr}");
    assert!(
        stderr.contains("no tool is enabled")
            && stderr.contains("names tools this server does not have: drop_tables"),
        "the reason is on stderr:\n{stderr}"
    );
    assert_eq!(
        stderr.matches("drop_tables").count(),
        1,
        "said once:\n{stderr}"
    );
}
