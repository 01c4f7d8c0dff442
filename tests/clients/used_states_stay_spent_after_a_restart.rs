//! MRTR request states are single use across a restart of the real safe-ops binary: a state
//! answered before the process was killed is refused by the restarted process (same
//! `GUARD_HMAC_KEY`), whether it was accepted or declined, and nothing runs again. safe-ops
//! keeps spent states in its operation store, so the restarted process knows the state as
//! used (`replayed`), not merely as one from before its boot.

use crate::support::{
    MRTR, World, assert_natural, assert_refused, call_once, complete, params, stdio::safe_ops_bin,
    text,
};
use rmcp::{
    RoleClient,
    model::{CallToolResponse, CallToolResult, InputResponses},
    service::RunningService,
    transport::TokioChildProcess,
};
use rmcp_guard::outcome::Outcome;
use rmcp_guard_test::testing::{INPUT_KEY, ScriptedHuman};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ScriptedHuman>;

const KEY: &str = "a fixed 32-byte-or-longer key for the restart tests";

/// safe-ops on the world's sandbox and database, with a fixed key, spoken to in MRTR.
async fn boot(world: &World) -> (Client, u32) {
    let mut command = tokio::process::Command::new(safe_ops_bin());
    command
        .arg("--root")
        .arg(&world.root)
        .arg("--db")
        .arg(&world.db)
        .env_remove("GUARD_ALLOWLIST")
        .env_remove("GUARD_READ_ONLY")
        // The default allowlist and audit log are the user's: this test's, not the machine's.
        .env("XDG_CONFIG_HOME", &world.base)
        .env("XDG_DATA_HOME", &world.base)
        .env("GUARD_HMAC_KEY", KEY)
        .env("RUST_LOG", "warn");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("safe-ops starts");
    let pid = transport.id().expect("a pid");
    let client = ScriptedHuman::new(MRTR)
        .connect(transport)
        .await
        .expect("MCP session with safe-ops");
    (client, pid)
}

/// Kills the process the way a crash or a deploy would, and waits until it is gone.
async fn kill(client: Client, pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "safe-ops ({pid}) was killed");
    let _ = client.cancel().await;
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    for _ in 0..500 {
        match std::fs::read_to_string(proc.join("stat")) {
            Err(_) => return,
            // A zombie has exited; its parent has not reaped it yet.
            Ok(stat) if stat.split_whitespace().nth(2) == Some("Z") => return,
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
        }
    }
    panic!("safe-ops ({pid}) is still running after SIGKILL");
}

/// The asking round: returns the sealed state.
async fn ask(client: &Client, tool: &str, args: Value) -> String {
    match call_once(client, params(tool, args)).await {
        CallToolResponse::InputRequired(required) => required.request_state.expect("state"),
        other => panic!("{tool}: expected InputRequired, got {other:?}"),
    }
}

/// The answering round: `state` echoed with `answer` under guard's input key.
async fn answer(
    client: &Client,
    tool: &str,
    args: Value,
    state: &str,
    answer: Value,
) -> CallToolResult {
    let retry = params(tool, args)
        .with_request_state(state)
        .with_input_responses(InputResponses::from([(INPUT_KEY.to_owned(), answer)]));
    complete(call_once(client, retry).await)
}

/// A table of three rows, created again after its drop exactly as it was: the preview the
/// human saw matches, so only the single-use rule can stop a replay.
fn create_scratch(world: &World) {
    let conn = rusqlite::Connection::open(&world.db).expect("writable connection");
    conn.execute_batch(
        "CREATE TABLE scratch (id INTEGER PRIMARY KEY, note TEXT NOT NULL);
         INSERT INTO scratch (note) VALUES ('a'), ('b'), ('c');",
    )
    .expect("create scratch");
}

fn accept_drop() -> Value {
    json!({"action": "accept", "content": {"typed_name": "scratch", "approver": "ada"}})
}

#[tokio::test]
async fn accepted_state_is_refused_after_a_restart() {
    let world = World::new();
    create_scratch(&world);
    let args = json!({"table": "scratch"});
    let (client, pid) = boot(&world).await;
    let state = ask(&client, "drop_table", args.clone()).await;
    let result = answer(&client, "drop_table", args.clone(), &state, accept_drop()).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.rows("scratch"), None, "the first answer dropped it");
    kill(client, pid).await;

    create_scratch(&world);
    let (client, pid) = boot(&world).await;
    let result = answer(&client, "drop_table", args, &state, accept_drop()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    assert!(
        text(&result).contains("Call the tool again"),
        "{}",
        text(&result)
    );
    assert_eq!(world.rows("scratch"), Some(3), "the replay dropped nothing");
    kill(client, pid).await;
}

#[tokio::test]
async fn declined_state_with_a_forged_accept_is_refused_after_a_restart() {
    let world = World::new();
    create_scratch(&world);
    let args = json!({"table": "scratch"});
    let (client, pid) = boot(&world).await;
    let state = ask(&client, "drop_table", args.clone()).await;
    let result = answer(
        &client,
        "drop_table",
        args.clone(),
        &state,
        json!({"action": "decline"}),
    )
    .await;
    assert_natural(&result, Outcome::Declined);
    kill(client, pid).await;

    let (client, pid) = boot(&world).await;
    let result = answer(&client, "drop_table", args.clone(), &state, accept_drop()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    assert_eq!(
        world.rows("scratch"),
        Some(3),
        "the forged accept dropped nothing"
    );

    // A fresh question on the restarted process still works.
    let state = ask(&client, "drop_table", args.clone()).await;
    let result = answer(&client, "drop_table", args, &state, accept_drop()).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.rows("scratch"), None);
    kill(client, pid).await;
}
