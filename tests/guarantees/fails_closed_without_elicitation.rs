//! A client that cannot ask the human (no form elicitation declared) gets a plain answer
//! telling the model to use a client that supports confirmation, and nothing runs.

use crate::support::*;
use rmcp::model::{CallToolResponse, ProtocolVersion};
use rmcp_guard::outcome::Outcome;
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    delete_file_fails_closed,
    drop_table_fails_closed,
    deploy_fails_closed
);

/// Calls `tool` from a client without elicitation; returns the final result after asserting
/// that the very first response already is final (no `InputRequiredResult`).
async fn call_without_elicitation(
    world: &World,
    era: &ProtocolVersion,
    tool: &str,
    args: Value,
) -> rmcp::model::CallToolResult {
    let human = ScriptedHuman::without_elicitation(era.clone());
    // Had the human been asked, this answer would have let the effect run.
    human.will(Answer::Accept(json!({
        "confirm": true,
        "typed_name": "orders",
        "approver": "ada",
        "approval_level": "urgent",
        "rollback_plan": "redeploy v41 from the registry"
    })));
    let client = connect(world.server(), human.clone()).await;
    let response = call_once(&client, params(tool, args.clone())).await;
    let result = match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("{tool}: the first response must be final, got {other:?}"),
    };
    // The driving helper must agree: one round, same outcome, nobody asked.
    let again = call(&client, tool, args).await;
    let _ = client.cancel().await;
    assert_eq!(outcome(&again), outcome(&result));
    assert!(human.shown().is_empty(), "{tool}: no elicitation was sent");
    assert_natural(&result, Outcome::UnsupportedClient);
    let text = text(&result);
    assert!(
        text.contains("Nothing was changed")
            && text.contains(tool)
            && text.contains("client that supports confirmation"),
        "{tool}: {text}"
    );
    result
}

async fn delete_file_fails_closed(era: ProtocolVersion) {
    let world = World::new();
    call_without_elicitation(&world, &era, "delete_file", json!({"path": "old.log"})).await;
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
}

async fn drop_table_fails_closed(era: ProtocolVersion) {
    let world = World::new();
    call_without_elicitation(&world, &era, "drop_table", json!({"table": "orders"})).await;
    assert_eq!(world.rows("orders"), Some(4));
}

async fn deploy_fails_closed(era: ProtocolVersion) {
    let world = World::new();
    call_without_elicitation(&world, &era, "deploy", json!({"service": "billing"})).await;
    assert!(world.deployments().is_empty());
}
