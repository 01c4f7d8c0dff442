//! Disclosure as its own dimension, on both protocol eras: a read-only tool that declares
//! what it discloses (safe-ops' `read_build_log`, and an export here whose handler can
//! over-report) stays read-only in its annotations, says what it discloses in `_meta.guard`
//! and its description, asks the human with the data boundary stated, shows nothing on
//! decline, cancel or a client that cannot ask, is capped per call (before asking, and on
//! what the handler returns, an error included) and per session, and is audited with its
//! counts, never its content.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use crate::support::{
    orders::Engine,
    over_http::{Callers, serve_http},
    *,
};
use rmcp::{
    ErrorData, ServerHandler,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock, ProtocolVersion, ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Boundary, Disclosed, Exposure, Guard, Guarded, ToolArgs, ToolError,
    audit::AuditLog,
    exposed,
    ops::{OperationStore, Operations, SqliteStore},
    outcome::Outcome,
    read_only,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    a_disclosure_is_asked_with_its_boundary_and_audited_without_content,
    decline_cancel_and_a_client_that_cannot_ask_show_nothing,
    a_count_above_the_cap_is_refused_before_asking,
    a_log_rewritten_after_the_question_is_not_shown,
    the_session_cap_holds_across_calls,
    a_handler_showing_more_than_stated_or_capped_shows_nothing,
    a_source_changed_while_the_handler_read_it_is_not_shown,
    one_line_reads_in_the_singular,
    an_error_carrying_more_than_the_byte_cap_is_withheld,
    an_is_error_result_over_the_byte_cap_is_withheld,
    a_small_error_still_reaches_the_model,
    the_session_tally_counts_error_bytes,
    an_error_of_a_tool_capped_in_items_only_is_held_to_the_error_limit
);

both_stores!(two_servers_sharing_one_store_share_a_callers_budget);

const SECRET: &str = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI-K7MDENG-bPxRfiCY";

fn tick() -> Answer {
    Answer::Accept(json!({"confirm": true}))
}

/// A world with `builds/42.log` of `lines` lines, one of which prints a secret.
fn builds(lines: usize) -> World {
    let world = World::new();
    std::fs::create_dir_all(world.path("builds")).unwrap();
    let mut log: Vec<String> = (1..lines).map(|i| format!("step {i}: ok")).collect();
    log.insert(0, format!("env: {SECRET}"));
    std::fs::write(world.path("builds/42.log"), log.join("\n") + "\n").unwrap();
    world
}

/// The one question `human` was shown, which must start with `opening`.
fn asked_once(human: &ScriptedHuman, opening: &str) -> rmcp_guard_test::testing::Shown {
    let [shown] = &human.shown()[..] else {
        panic!("one question: {:?}", human.shown());
    };
    assert!(shown.message.starts_with(opening), "{}", shown.message);
    shown.clone()
}

fn audited(world: &World) -> (SafeOpsWithLog, AuditLog) {
    let log = AuditLog::new(
        SqliteStore::open(world.base.join("audit.db")).unwrap(),
        "disclosure test",
    );
    let server = world.server_with(
        Guard::ephemeral()
            .unwrap()
            .with_exposure(Exposure::all_tools())
            .with_audit(log.clone()),
    );
    (server, log)
}

type SafeOpsWithLog = safe_ops::server::SafeOps;

async fn a_disclosure_is_asked_with_its_boundary_and_audited_without_content(era: ProtocolVersion) {
    let world = builds(3);
    let (server, log) = audited(&world);
    let guard = server.guard_config().clone();
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let client = connect(server, human.clone()).await;

    let result = call(&client, "read_build_log", json!({"job": 42})).await;
    assert_natural(&result, Outcome::Executed);
    assert!(text(&result).contains(SECRET), "the approved log is shown");
    assert!(text(&result).contains("step 2: ok"));

    let shown = asked_once(
        &human,
        "Show the agent the full build log of build job 42: 3 log lines.\n\nIt may contain secrets printed by accident",
    );
    assert!(
        shown.message.contains("cannot be taken back"),
        "{}",
        shown.message
    );
    assert!(
        !shown.message.contains(SECRET),
        "the question holds the boundary, not the data"
    );

    guard.audit_settled().await;
    let trace = trace_id(&result).expect("trace id");
    let records = log.by_trace(&trace).await.unwrap();
    assert!(!records.is_empty());
    for record in &records {
        assert!(!record.entry.contains("wJalrXUtnFEMI"), "{}", record.entry);
        assert!(!record.entry.contains("step 2"), "{}", record.entry);
    }
    let last: Value = serde_json::from_str(&records.last().unwrap().entry).unwrap();
    assert_eq!(last["outcome"], "executed");
    assert_eq!(last["target"], "build job 42");
    assert!(
        last["preview"]
            .as_str()
            .unwrap()
            .contains("the full build log of build job 42: 3 log lines"),
        "{last}"
    );
    assert_eq!(last["disclosed"]["class"], "credentials");
    assert_eq!(last["disclosed"]["items"], 3);
    assert_eq!(last["disclosed"]["session_items"], 3);
    let bytes = last["disclosed"]["bytes"].as_u64().unwrap();
    assert!(
        bytes > SECRET.len() as u64,
        "guard counted the serialized result: {bytes}"
    );
    let _ = client.cancel().await;
}

async fn decline_cancel_and_a_client_that_cannot_ask_show_nothing(era: ProtocolVersion) {
    let world = builds(3);
    for (answer, expected) in [
        (Answer::Decline, Outcome::Declined),
        (Answer::Cancel, Outcome::Cancelled),
    ] {
        let human = ScriptedHuman::new(era.clone());
        human.will(answer);
        let client = connect(world.server(), human.clone()).await;
        let result = call(&client, "read_build_log", json!({"job": 42})).await;
        assert_natural(&result, expected);
        assert!(
            !text(&result).contains("wJalrXUtnFEMI"),
            "{}",
            text(&result)
        );
        // A disclosure that did not happen says what did not happen: nothing was shown.
        assert!(
            text(&result).contains("; nothing was shown (read_build_log did not run)."),
            "{}",
            text(&result)
        );
        assert_eq!(human.shown().len(), 1, "{expected:?}: asked once");
        let _ = client.cancel().await;
    }
    let human = ScriptedHuman::without_elicitation(era.clone());
    human.will(tick());
    let client = connect(world.server(), human.clone()).await;
    let result = call(&client, "read_build_log", json!({"job": 42})).await;
    assert_natural(&result, Outcome::UnsupportedClient);
    assert!(
        !text(&result).contains("wJalrXUtnFEMI"),
        "{}",
        text(&result)
    );
    assert!(
        text(&result).starts_with("Nothing was shown: read_build_log needs"),
        "{}",
        text(&result)
    );
    assert!(human.shown().is_empty());
    // No such job: a natural answer, nobody asked.
    let human = ScriptedHuman::new(era.clone());
    let client = connect(world.server(), human.clone()).await;
    let result = call(&client, "read_build_log", json!({"job": 7})).await;
    assert_natural(&result, Outcome::PreconditionFailed);
    assert!(human.shown().is_empty());
    let _ = client.cancel().await;
}

async fn a_count_above_the_cap_is_refused_before_asking(era: ProtocolVersion) {
    let world = builds(2500);
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let client = connect(world.server(), human.clone()).await;
    // The whole log, and a model raising `tail` past the cap: refused, nobody asked.
    for args in [
        json!({"job": 42}),
        json!({"job": 42, "tail": 2001}),
        json!({"job": 42, "tail": 4000000000u32}),
    ] {
        let result = call(&client, "read_build_log", args.clone()).await;
        assert_natural(&result, Outcome::OverDisclosureCap);
        let said = text(&result);
        assert!(
            said.starts_with("Nothing was shown:") && said.contains("at most 2000 per call"),
            "{args}: {said}"
        );
        assert!(!said.contains("wJalrXUtnFEMI"), "{said}");
    }
    assert!(human.shown().is_empty(), "nobody was asked");
    // Within the cap it asks, and shows what was approved.
    let result = call(&client, "read_build_log", json!({"job": 42, "tail": 2000})).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(human.shown().len(), 1);
    assert!(
        human.shown()[0]
            .message
            .contains("the last 2000 lines of the build log of build job 42: 2000 log lines")
    );
    let _ = client.cancel().await;
}

async fn a_log_rewritten_after_the_question_is_not_shown(era: ProtocolVersion) {
    let world = builds(3);
    let path = world.path("builds/42.log");
    let human = ScriptedHuman::new(era.clone());
    human.will(tick());
    let observer = Observer::new(human.clone()).while_asked(move || {
        std::fs::write(
            &path,
            format!("env: {SECRET}\nand a new line\nand more\nand more\n"),
        )
        .unwrap();
    });
    let client = connect(world.server(), observer).await;
    let result = call(&client, "read_build_log", json!({"job": 42})).await;
    assert!(
        matches!(
            outcome(&result),
            Some(Outcome::StateChanged) | Some(Outcome::BadState)
        ),
        "{:?}: {}",
        outcome(&result),
        text(&result)
    );
    assert!(
        !text(&result).contains("wJalrXUtnFEMI"),
        "{}",
        text(&result)
    );
    let _ = client.cancel().await;
}

async fn the_session_cap_holds_across_calls(era: ProtocolVersion) {
    // safe-ops: 2000 lines per call, 10000 per session.
    let world = builds(2000);
    let server = world.server();
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..6 {
        human.will(tick());
    }
    let client = connect(server.clone(), human.clone()).await;
    for i in 0..5 {
        let result = call(&client, "read_build_log", json!({"job": 42})).await;
        assert_natural(&result, Outcome::Executed);
        assert_eq!(human.shown().len(), i + 1);
    }
    let result = call(&client, "read_build_log", json!({"job": 42})).await;
    assert_natural(&result, Outcome::OverDisclosureCap);
    let said = text(&result);
    assert!(
        said.contains("at most 10000 log lines per session, 10000 were shown already"),
        "{said}"
    );
    assert_eq!(human.shown().len(), 5, "the sixth call asked nobody");
    // A smaller request does not fit either: the session is spent.
    let result = call(&client, "read_build_log", json!({"job": 42, "tail": 1})).await;
    assert_natural(&result, Outcome::OverDisclosureCap);
    let _ = client.cancel().await;
    if era.has_initialize() {
        // Another connection to the same server is another session, with its own budget.
        let other = ScriptedHuman::new(era.clone());
        other.will(tick());
        let client = connect(server, other.clone()).await;
        let result = call(&client, "read_build_log", json!({"job": 42})).await;
        assert_natural(&result, Outcome::Executed);
        let _ = client.cancel().await;
    }
}

/// An export whose handler returns what the test says, to check guard's own counting.
#[derive(Clone)]
struct Export {
    guard: Arc<Guard>,
    /// The table's version, the boundary's state: a write moves it on.
    version: Arc<AtomicU64>,
}

impl Guarded for Export {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct ExportArgs {
    /// How many rows the boundary states.
    states: u64,
    /// How many rows the handler returns.
    returns: u64,
    /// Bytes of padding in each row.
    pad: usize,
    /// Whether the table is written to while the handler reads it.
    #[serde(default)]
    written_meanwhile: bool,
    /// How the handler fails, with the rows in its error, if it does.
    #[serde(default)]
    fails: Option<Failure>,
}

/// How an export fails: an `Err` (of the tool's error type), an `Ok` result marked
/// `isError`, or a protocol error.
#[derive(Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema, ToolArgs)]
#[serde(rename_all = "snake_case")]
enum Failure {
    Err,
    IsError,
    Protocol,
}

/// The rows an export reads, as text.
fn rows(args: &ExportArgs) -> String {
    format!("row {}\n", "x".repeat(args.pad)).repeat(args.returns as usize)
}

#[tool_router]
impl Export {
    /// Export rows.
    #[read_only(
        discloses = "bulk",
        boundary = Self::rows_boundary,
        max_items = 5,
        max_bytes = 2000,
        session_max_items = 8
    )]
    #[tool]
    async fn export_rows(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<Disclosed<String>, ToolError> {
        if args.written_meanwhile {
            self.version.fetch_add(1, Ordering::SeqCst);
        }
        if args.fails.is_some() {
            return Err(ToolError::new(
                rmcp_guard::Code::own("EXPORT_FAILED"),
                format!("failed:\n{}", rows(&args)),
            ));
        }
        Ok(Disclosed::new(args.returns, rows(&args)))
    }

    /// Export rows as text; an error is text too.
    #[read_only(
        discloses = "bulk",
        boundary = Self::rows_boundary,
        max_items = 5,
        max_bytes = 2000,
        session_max_bytes = 3000
    )]
    #[tool]
    async fn export_text(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<Disclosed<Result<String, String>>, String> {
        if args.written_meanwhile {
            self.version.fetch_add(1, Ordering::SeqCst);
        }
        match args.fails {
            Some(Failure::Err) => Err(format!("failed:\n{}", rows(&args))),
            Some(Failure::IsError) => Ok(Disclosed::new(0, Err(rows(&args)))),
            _ => Ok(Disclosed::new(args.returns, Ok(rows(&args)))),
        }
    }

    /// Export rows, or fail with a protocol error or a result marked `isError`.
    #[read_only(
        discloses = "bulk",
        boundary = Self::rows_boundary,
        max_items = 5,
        max_bytes = 2000
    )]
    #[tool]
    async fn export_result(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<Disclosed<CallToolResult>, ErrorData> {
        let text = vec![ContentBlock::text(rows(&args))];
        match args.fails {
            Some(Failure::Protocol) => Err(ErrorData::internal_error(rows(&args), None)),
            Some(_) => Ok(Disclosed::new(0, CallToolResult::error(text))),
            None => Ok(Disclosed::new(args.returns, CallToolResult::success(text))),
        }
    }

    /// Show rows, bounded in rows only.
    #[read_only(discloses = "sensitive", boundary = Self::rows_boundary, max_items = 5)]
    #[tool]
    async fn show_rows(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<Disclosed<String>, String> {
        match args.fails {
            Some(_) => Err(format!("failed:\n{}", rows(&args))),
            None => Ok(Disclosed::new(args.returns, rows(&args))),
        }
    }

    async fn rows_boundary(&self, args: &ExportArgs) -> Result<Boundary, ToolError> {
        Ok(Boundary::new("the orders table", "every row")
            .account("reporting")
            .items(args.states, "rows")
            .with_state(self.version.load(Ordering::SeqCst).to_string()))
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Export {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl Export {
    fn new() -> Self {
        Export {
            guard: Arc::new(
                Guard::ephemeral()
                    .unwrap()
                    .with_exposure(Exposure::all_tools()),
            ),
            version: Arc::default(),
        }
    }

    /// An export whose calls are audited in `world`.
    fn audited(world: &World) -> (Self, AuditLog) {
        let log = AuditLog::new(
            SqliteStore::open(world.base.join("audit.db")).unwrap(),
            "disclosure test",
        );
        let guard = Guard::ephemeral()
            .unwrap()
            .with_exposure(Exposure::all_tools())
            .with_audit(log.clone());
        let export = Export {
            guard: Arc::new(guard),
            version: Arc::default(),
        };
        (export, log)
    }
}

/// The `disclosed` counts of the last audit record of the call that answered `result`, after
/// checking that no record of it holds the rows' text.
async fn disclosed_counts(export: &Export, log: &AuditLog, result: &CallToolResult) -> Value {
    export.guard.audit_settled().await;
    let trace = trace_id(result).expect("trace id");
    let records = log.by_trace(&trace).await.unwrap();
    for record in &records {
        assert!(!record.entry.contains("xxxx"), "{}", record.entry);
    }
    let last: Value = serde_json::from_str(&records.last().expect("a record").entry).unwrap();
    last["disclosed"].clone()
}

/// Export arguments: `states` and `returns` rows of `pad` bytes, failing as `fails` says
/// (`None`: not at all).
fn failing(rows: u64, pad: usize, fails: Option<&str>) -> Value {
    json!({"states": rows, "returns": rows, "pad": pad, "fails": fails})
}

/// Asserts that `result` withheld an error: a natural `over_disclosure_cap` answer that says
/// the call failed and names `cap`, with none of the rows in it.
#[track_caller]
fn assert_error_withheld(result: &CallToolResult, cap: &str) {
    assert_natural(result, Outcome::OverDisclosureCap);
    let said = text(result);
    assert!(said.starts_with("Nothing was shown: "), "{said}");
    assert!(said.contains(" failed, and its error is "), "{said}");
    assert!(said.contains(cap), "{said}");
    assert!(
        said.contains("Tell the user the call failed")
            || said.contains("tell the user the call failed"),
        "{said}"
    );
    assert!(!said.contains("xxxx"), "{said}");
}

async fn a_handler_showing_more_than_stated_or_capped_shows_nothing(era: ProtocolVersion) {
    let server = Export::new();
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..4 {
        human.will(tick());
    }
    let client = connect(server, human.clone()).await;
    // More rows than the human approved.
    let result = call(
        &client,
        "export_rows",
        json!({"states": 2, "returns": 3, "pad": 0}),
    )
    .await;
    assert_natural(&result, Outcome::OverDisclosureCap);
    assert!(
        text(&result).contains("returned 3 rows, more than the 2 the user approved"),
        "{}",
        text(&result)
    );
    assert!(!text(&result).contains("row "), "{}", text(&result));
    assert!(
        human.shown()[0]
            .message
            .contains("every row of the orders table, read as reporting: 2 rows")
    );
    // More bytes than the per-call cap, counted by guard on the serialized result.
    let result = call(
        &client,
        "export_rows",
        json!({"states": 2, "returns": 2, "pad": 1500}),
    )
    .await;
    assert_natural(&result, Outcome::OverDisclosureCap);
    assert!(
        text(&result).contains("at most 2000 bytes per call"),
        "{}",
        text(&result)
    );
    assert!(!text(&result).contains("xxxx"));
    // Withheld results count for nothing: the session still has its 8 rows.
    let result = call(
        &client,
        "export_rows",
        json!({"states": 5, "returns": 5, "pad": 0}),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    let result = call(
        &client,
        "export_rows",
        json!({"states": 3, "returns": 2, "pad": 0}),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(human.shown().len(), 4);
    // 7 of 8 shown: two more are refused before asking.
    let result = call(
        &client,
        "export_rows",
        json!({"states": 2, "returns": 2, "pad": 0}),
    )
    .await;
    assert_natural(&result, Outcome::OverDisclosureCap);
    assert_eq!(human.shown().len(), 4);
    let _ = client.cancel().await;
}

async fn a_source_changed_while_the_handler_read_it_is_not_shown(era: ProtocolVersion) {
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..3 {
        human.will(tick());
    }
    let client = connect(Export::new(), human.clone()).await;
    let args = |written_meanwhile| json!({"states": 2, "returns": 2, "pad": 0, "written_meanwhile": written_meanwhile});
    let result = call(&client, "export_rows", args(true)).await;
    assert_eq!(outcome(&result), Some(Outcome::StateChanged), "{result:?}");
    assert!(
        text(&result).starts_with(
            "[STATE_CHANGED] Nothing was shown: the orders table changed while export_rows read it"
        ),
        "{}",
        text(&result)
    );
    assert!(!text(&result).contains("row "), "{}", text(&result));
    // Nothing shown counts for nothing, and a table left alone is shown.
    for _ in 0..2 {
        let result = call(&client, "export_rows", args(false)).await;
        assert_natural(&result, Outcome::Executed);
        assert!(text(&result).contains("row "));
    }
    assert_eq!(human.shown().len(), 3, "each call asked once");
    let _ = client.cancel().await;
}

async fn one_line_reads_in_the_singular(era: ProtocolVersion) {
    let world = builds(3);
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Decline);
    let client = connect(world.server(), human.clone()).await;
    let result = call(&client, "read_build_log", json!({"job": 42, "tail": 1})).await;
    assert_natural(&result, Outcome::Declined);
    asked_once(
        &human,
        "Show the agent the last line of the build log of build job 42: 1 log line.\n",
    );
    let _ = client.cancel().await;
}

async fn an_error_carrying_more_than_the_byte_cap_is_withheld(era: ProtocolVersion) {
    let world = World::new();
    let (export, log) = Export::audited(&world);
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..4 {
        human.will(tick());
    }
    let client = connect(export.clone(), human.clone()).await;
    // Two rows of 1500 bytes in the error: the per-call cap is 2000 bytes.
    for tool in ["export_rows", "export_text"] {
        let result = call(&client, tool, failing(2, 1500, Some("err"))).await;
        assert_error_withheld(&result, "at most 2000 bytes per call");
        let disclosed = disclosed_counts(&export, &log, &result).await;
        assert_eq!(disclosed["withheld"], true, "{disclosed}");
        assert_eq!(disclosed["error"], true, "{disclosed}");
        assert_eq!(disclosed["items"], 0, "{disclosed}");
        assert!(disclosed["bytes"].as_u64().unwrap() > 3000, "{disclosed}");
    }
    // A protocol error is read by the model too: withheld, not sent.
    let result = call(&client, "export_result", failing(2, 1500, Some("protocol"))).await;
    assert_error_withheld(&result, "at most 2000 bytes per call");
    // An error read from a source that changed while the handler read it is not shown either.
    let mut args = failing(1, 10, Some("err"));
    args["written_meanwhile"] = json!(true);
    let result = call(&client, "export_text", args).await;
    assert_eq!(outcome(&result), Some(Outcome::StateChanged), "{result:?}");
    assert!(!text(&result).contains("xxxx"), "{}", text(&result));
    assert_eq!(human.shown().len(), 4, "each call asked once");
    let _ = client.cancel().await;
}

async fn an_is_error_result_over_the_byte_cap_is_withheld(era: ProtocolVersion) {
    let world = World::new();
    let (export, log) = Export::audited(&world);
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..2 {
        human.will(tick());
    }
    let client = connect(export.clone(), human.clone()).await;
    for tool in ["export_text", "export_result"] {
        let result = call(&client, tool, failing(2, 1500, Some("is_error"))).await;
        assert_error_withheld(&result, "at most 2000 bytes per call");
        let disclosed = disclosed_counts(&export, &log, &result).await;
        assert_eq!(disclosed["withheld"], true, "{disclosed}");
        assert_eq!(disclosed["error"], true, "{disclosed}");
    }
    let _ = client.cancel().await;
}

async fn a_small_error_still_reaches_the_model(era: ProtocolVersion) {
    let world = World::new();
    let (export, log) = Export::audited(&world);
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..5 {
        human.will(tick());
    }
    let client = connect(export.clone(), human.clone()).await;
    let mut tallied = std::collections::HashMap::<&str, u64>::new();
    for (tool, fails) in [
        ("export_rows", "err"),
        ("export_text", "err"),
        ("export_text", "is_error"),
        ("export_result", "is_error"),
    ] {
        let result = call(&client, tool, failing(2, 10, Some(fails))).await;
        assert!(is_error(&result), "{tool} {fails}: {result:?}");
        assert_eq!(outcome(&result), Some(Outcome::HandlerError), "{result:?}");
        assert!(
            text(&result).contains("row xxxxxxxxxx\nrow"),
            "{}",
            text(&result)
        );
        let disclosed = disclosed_counts(&export, &log, &result).await;
        assert_eq!(disclosed["error"], true, "{disclosed}");
        assert_eq!(disclosed.get("withheld"), None, "{disclosed}");
        let bytes = disclosed["bytes"].as_u64().unwrap();
        assert!(
            bytes > 30,
            "{tool} {fails}: the error's bytes are counted: {disclosed}"
        );
        let so_far = tallied.entry(tool).or_default();
        *so_far += bytes;
        assert_eq!(
            disclosed["session_bytes"], *so_far,
            "the tally holds it: {disclosed}"
        );
    }
    // A protocol error within the cap reaches the client as one.
    let error = client
        .call_tool(params("export_result", failing(2, 10, Some("protocol"))))
        .await
        .expect_err("a protocol error");
    assert!(error.to_string().contains("row xxxxxxxxxx"), "{error}");
    assert_eq!(human.shown().len(), 5);
    let _ = client.cancel().await;
}

async fn the_session_tally_counts_error_bytes(era: ProtocolVersion) {
    // export_text: 2000 bytes per call, 3000 per session.
    let world = World::new();
    let (export, log) = Export::audited(&world);
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..3 {
        human.will(tick());
    }
    let client = connect(export.clone(), human.clone()).await;
    let error = call(&client, "export_text", failing(1, 1200, Some("err"))).await;
    assert!(is_error(&error), "{error:?}");
    let error_bytes = disclosed_counts(&export, &log, &error).await["bytes"]
        .as_u64()
        .unwrap();
    assert!(error_bytes > 1200, "{error_bytes}");
    let shown = call(&client, "export_text", failing(1, 1200, None)).await;
    assert_natural(&shown, Outcome::Executed);
    let disclosed = disclosed_counts(&export, &log, &shown).await;
    let shown_bytes = disclosed["bytes"].as_u64().unwrap();
    assert_eq!(
        disclosed["session_bytes"],
        error_bytes + shown_bytes,
        "the session's tally holds the error's bytes: {disclosed}"
    );
    // A third of the same size no longer fits in the session's 3000 bytes.
    let result = call(&client, "export_text", failing(1, 1200, Some("err"))).await;
    assert_error_withheld(&result, "of the 3000 it shows per session");
    assert!(
        text(&result).contains("The limit starts again"),
        "{}",
        text(&result)
    );
    let _ = client.cancel().await;
}

async fn an_error_of_a_tool_capped_in_items_only_is_held_to_the_error_limit(era: ProtocolVersion) {
    // show_rows caps rows only: an error has no count, so it gets guard's 4096 bytes.
    let human = ScriptedHuman::new(era.clone());
    for _ in 0..3 {
        human.will(tick());
    }
    let client = connect(Export::new(), human.clone()).await;
    let result = call(&client, "show_rows", failing(2, 2500, Some("err"))).await;
    assert_error_withheld(
        &result,
        "an error of a tool without a byte cap shows at most 4096 bytes per call",
    );
    let result = call(&client, "show_rows", failing(2, 1000, Some("err"))).await;
    assert!(is_error(&result), "{result:?}");
    assert!(text(&result).contains("xxxx"), "{}", text(&result));
    // Its rows, counted and approved, are not held to that limit.
    let result = call(&client, "show_rows", failing(2, 2500, None)).await;
    assert_natural(&result, Outcome::Executed);
    assert!(text(&result).contains("xxxx"));
    let _ = client.cancel().await;
}

#[tokio::test]
async fn tools_list_shows_read_only_and_what_is_disclosed() {
    let world = builds(3);
    let client = connect(world.server(), ScriptedHuman::new(PUSH)).await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == "read_build_log")
        .expect("read_build_log is published");
    let hints = tool.annotations.as_ref().expect("annotations");
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.destructive_hint, Some(false));
    let meta = serde_json::to_value(tool.meta.as_ref().expect("_meta")).unwrap();
    assert_eq!(
        meta["guard"],
        json!({"discloses": "credentials", "max_items": 2000, "max_bytes": 262144, "session_max_items": 10000})
    );
    let description = tool.description.as_deref().unwrap();
    assert!(
        description.starts_with("Show the build log of a CI job (`builds/<job>.log`), or its last lines.\n\nDiscloses credentials: It may contain secrets"),
        "{description}"
    );
    assert!(
        description.contains("at most 2000 items per call"),
        "{description}"
    );
    let _ = client.cancel().await;
}

/// Reads `builds/42.log` (2000 lines) as `client` does, once accepted by `human`: how the
/// call ended, and its text.
async fn read_log<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    human: &ScriptedHuman,
) -> (Option<Outcome>, String) {
    human.will(tick());
    let result = call(client, "read_build_log", json!({"job": 42})).await;
    (outcome(&result), text(&result))
}

/// Says the session cap of `read_build_log` is spent, and when it starts again.
fn assert_spent((outcome, said): &(Option<Outcome>, String)) {
    assert_eq!(*outcome, Some(Outcome::OverDisclosureCap), "{said}");
    assert!(
        said.contains("at most 10000 log lines per session, 10000 were shown already"),
        "{said}"
    );
    assert!(
        said.contains("The limit starts again at ") && said.contains("24 hours"),
        "{said}"
    );
    assert!(!said.contains(SECRET), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_on_2026_07_28_one_client_is_held_to_the_session_cap() {
    // rmcp builds a service per request here: the budget must outlive each of them.
    let world = builds(2000);
    let http = serve_http(world.server()).await;
    let human = ScriptedHuman::new(MRTR);
    let client = http.connect(human.clone(), None).await;
    for _ in 0..5 {
        let (outcome, said) = read_log(&client, &human).await;
        assert_eq!(outcome, Some(Outcome::Executed), "{said}");
    }
    let refused = read_log(&client, &human).await;
    assert_spent(&refused);
    assert_eq!(human.shown().len(), 5, "the sixth call asked nobody");
    let _ = client.cancel().await;
    // A new client is no new session: nobody told guard who it is, so it shares the one
    // budget of every caller guard cannot tell apart.
    let again = ScriptedHuman::new(MRTR);
    let client = http.connect(again.clone(), None).await;
    assert_spent(&read_log(&client, &again).await);
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_on_2026_07_28_another_person_has_their_own_budget_and_a_respelling_is_the_same_person()
 {
    let world = builds(2000);
    let store = SqliteStore::open(world.base.join("operations.db")).unwrap();
    let guard = Guard::ephemeral()
        .unwrap()
        .with_operations(Operations::new(store, Callers::new("nobody")));
    let http = serve_http(world.server_with(guard)).await;
    let alice = ScriptedHuman::new(MRTR);
    let client = http.connect(alice.clone(), Some("alice")).await;
    for _ in 0..5 {
        assert_eq!(read_log(&client, &alice).await.0, Some(Outcome::Executed));
    }
    assert_spent(&read_log(&client, &alice).await);
    // Case and width fold into one person: alice again, on a new client.
    for spelling in ["ALICE", "ａｌｉｃｅ"] {
        let human = ScriptedHuman::new(MRTR);
        let client = http.connect(human.clone(), Some(spelling)).await;
        assert_spent(&read_log(&client, &human).await);
        assert!(human.shown().is_empty(), "{spelling} was asked nobody");
        let _ = client.cancel().await;
    }
    // A spelling with an invisible character is refused, never a budget of its own.
    let human = ScriptedHuman::new(MRTR);
    let client = http.connect(human.clone(), Some("ali\u{200b}ce")).await;
    human.will(tick());
    let result = call(&client, "read_build_log", json!({"job": 42})).await;
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert!(
        text(&result).contains("Nothing was shown"),
        "{}",
        text(&result)
    );
    assert!(!text(&result).contains(SECRET));
    assert!(human.shown().is_empty(), "nobody was asked");
    let _ = client.cancel().await;
    // Another person has a budget of their own.
    let bob = ScriptedHuman::new(MRTR);
    let client = http.connect(bob.clone(), Some("bob")).await;
    assert_eq!(read_log(&client, &bob).await.0, Some(Outcome::Executed));
    let _ = client.cancel().await;
}

/// Two servers of safe-ops, each with a `Guard` of its own on its own connection to one
/// store (a SQLite file opened twice, or two PostgreSQL pools), as replicas are.
async fn two_servers_sharing_one_store_share_a_callers_budget(engine: Engine) {
    let Some(shared) = orders::World::new(engine).await else {
        return;
    };
    let replica = |store: Arc<dyn OperationStore>, world: &World| {
        let guard = Guard::ephemeral()
            .unwrap()
            .with_operations(Operations::new(store, Callers::new("alice")));
        world.server_with(guard)
    };
    let second_store: Arc<dyn OperationStore> = match &shared.sqlite_path() {
        Some(path) => Arc::new(SqliteStore::open(path).unwrap()),
        None => Arc::new(
            order_cancel::stores::connect_postgres(
                &guard_tests::configured_pg_url().unwrap(),
                shared.schema.as_deref().unwrap(),
                4,
            )
            .unwrap(),
        ),
    };
    let world = builds(2000);
    let human = ScriptedHuman::new(MRTR);
    let one = connect(replica(shared.store.clone(), &world), human.clone()).await;
    let other = ScriptedHuman::new(MRTR);
    let two = connect(replica(second_store, &world), other.clone()).await;
    for (client, human) in [
        (&one, &human),
        (&two, &other),
        (&one, &human),
        (&two, &other),
    ] {
        assert_eq!(read_log(client, human).await.0, Some(Outcome::Executed));
    }
    // 8000 lines shown: room for one more call of 2000, and each server takes one at once.
    let (a, b) = tokio::join!(read_log(&one, &human), read_log(&two, &other));
    let executed = [&a, &b]
        .iter()
        .filter(|(outcome, _)| *outcome == Some(Outcome::Executed))
        .count();
    assert_eq!(executed, 1, "one shown, one withheld: {a:?} {b:?}");
    assert_spent(&read_log(&two, &other).await);
    assert_spent(&read_log(&one, &human).await);
    assert_eq!(
        human.shown().len() + other.shown().len(),
        6,
        "the calls past the cap asked nobody"
    );
    let _ = one.cancel().await;
    let _ = two.cancel().await;
}
