//! Arguments of the wrong shape (a missing field, a wrong type, an unknown field the type
//! denies) reach guard, not rmcp's deserialiser: a guarded tool, a two-phase tool (and
//! `get_operation_result`) and a keyed tool each answer guard's `INVALID_INPUT` with a trace
//! id, write an audit record, and run nothing, on both protocol eras.

use crate::support::*;
use rmcp::model::ProtocolVersion;
use rmcp_guard::{
    Code, Guard,
    audit::AuditLog,
    ops::{SqlValue, SqliteStore},
    outcome::Outcome,
};
use rmcp_guard_test::testing::ScriptedHuman;
use serde_json::{Value, json};

both_eras!(
    a_guarded_tool_refuses_malformed_arguments_and_asks_nobody,
    two_phase_and_keyed_tools_refuse_malformed_arguments_and_store_nothing,
);

/// The refusal every malformed call gets: `code`, tagged `outcome`, with a trace id.
#[track_caller]
fn refused(result: &rmcp::model::CallToolResult, outcome: Outcome, args: &Value) -> String {
    assert_refused(result, Code::InvalidInput, outcome);
    assert!(
        text(result).contains("do not fit"),
        "{args}: {}",
        text(result)
    );
    trace_id(result).unwrap_or_else(|| panic!("{args}: no trace id in {result:?}"))
}

async fn a_guarded_tool_refuses_malformed_arguments_and_asks_nobody(era: ProtocolVersion) {
    let world = World::new();
    let log = AuditLog::new(
        SqliteStore::open(world.base.join("audit.db")).unwrap(),
        "malformed arguments test",
    );
    let guard = Guard::ephemeral()
        .unwrap()
        .with_exposure(rmcp_guard::Exposure::all_tools())
        .with_audit(log.clone());
    let server = world.server_with(guard);
    let guard = server.guard_config().clone();
    let human = ScriptedHuman::new(era);
    let client = connect(server, human.clone()).await;
    let mut traces = Vec::new();
    for args in [
        json!({}),
        json!({"path": 5}),
        json!({"path": ["old.log"]}),
        json!({"path": null}),
    ] {
        let result = call(&client, "delete_file", args.clone()).await;
        traces.push(refused(&result, Outcome::InvalidArguments, &args));
    }
    let _ = client.cancel().await;
    assert!(human.shown().is_empty(), "nobody was asked");
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    guard.audit_settled().await;
    let records = log.records().await.unwrap();
    for trace in &traces {
        let of_call: Vec<Value> = records
            .iter()
            .filter_map(|r| r.json())
            .filter(|e| e["trace_id"] == trace.as_str())
            .collect();
        assert_eq!(of_call.len(), 1, "one record of {trace}: {of_call:?}");
        assert_eq!(of_call[0]["outcome"], "invalid_arguments", "{of_call:?}");
        assert_eq!(
            of_call[0]["code"],
            Code::InvalidInput.as_str(),
            "{of_call:?}"
        );
        assert_eq!(of_call[0]["tool"], "delete_file", "{of_call:?}");
    }
}

async fn two_phase_and_keyed_tools_refuse_malformed_arguments_and_store_nothing(
    era: ProtocolVersion,
) {
    let world = orders::World::new(orders::Engine::Sqlite)
        .await
        .expect("SQLite needs no configuration");
    let client = connect(
        world.server("tenant_demo", "alice", &[orders::SCOPE]),
        ScriptedHuman::new(era),
    )
    .await;
    let unknown_operation = "5f0c3c1e-7d9b-4f7e-9a55-3f6f3c2b1a00";
    let calls = [
        ("prepare_order_cancel", json!({"order_no": "A10001"})),
        (
            "prepare_order_cancel",
            json!({"order_no": 10001, "reason": "changed my mind"}),
        ),
        ("confirm_order_cancel", json!({})),
        ("confirm_order_cancel", json!({"operation_id": 7})),
        (
            "confirm_order_cancel",
            json!({"operation_id": unknown_operation, "force": true}),
        ),
        ("get_operation_result", json!({})),
        (
            "get_operation_result",
            json!({"operation_id": unknown_operation, "verbose": true}),
        ),
        (
            "open_ticket",
            json!({"order_no": "A10001", "subject": "Where is it?"}),
        ),
        (
            "open_ticket",
            json!({"request_id": 42, "order_no": "A10001", "subject": "Where is it?"}),
        ),
    ];
    for (tool, args) in calls {
        let result = call(&client, tool, args.clone()).await;
        let trace = refused(&result, Outcome::Refused(Code::InvalidInput), &args);
        let rows = world
            .query(
                "SELECT tool, outcome, user_id FROM guard_audit_log WHERE trace_id = $1",
                &[SqlValue::from(trace.as_str())],
            )
            .await;
        assert_eq!(rows.len(), 1, "{tool} {args}: one record");
        assert_eq!(rows[0].text("tool").unwrap(), tool);
        assert_eq!(
            Outcome::parse(rows[0].text("outcome").unwrap()),
            Some(Outcome::Refused(Code::InvalidInput)),
            "{tool} {args}"
        );
        assert_eq!(rows[0].opt_text("user_id").unwrap(), Some("alice"));
    }
    let _ = client.cancel().await;
    for table in [
        "guard_operations",
        "guard_idempotency",
        "guard_rate_events",
        "order_cancel_requests",
        "support_tickets",
    ] {
        let n = world
            .count(&format!("SELECT COUNT(*) AS n FROM {table}"), &[])
            .await;
        assert_eq!(n, 0, "nothing ran, so nothing is in {table}");
    }
}
