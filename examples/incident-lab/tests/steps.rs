//! One test per step of the lab, on real SQLite files in temp dirs, through real in-process
//! rmcp clients and servers. Each checks the database file, not only what the model saw.

use incident_lab::{
    ATTACK, Lab, REQUEST, backup,
    client::{self, Reply, call, connect, tool_names},
    layers::{ENABLED, ReadOnlySql, Shop},
    naive::NaiveServer,
    record::{Incident, SECTIONS},
    shop::{self, Order},
    transcript::{self, ERA, READ_ONLY_ATTACKS, TEST_ORDER},
};
use rmcp::model::{CallToolResult, ProtocolVersion};
use rmcp_guard::Code;
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::json;
use tempfile::TempDir;

fn lab() -> (TempDir, Lab) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lab = Lab::prepare(&dir.path().join("lab")).expect("lab prepared");
    (dir, lab)
}

fn orders(lab: &Lab) -> Option<Vec<Order>> {
    lab.orders().expect("orders readable")
}

fn ids(orders: &[Order]) -> Vec<i64> {
    orders.iter().map(|o| o.id).collect()
}

#[track_caller]
fn result(reply: Reply) -> CallToolResult {
    reply.unwrap_or_else(|e| panic!("expected a tool result, got JSON-RPC error {e:?}"))
}

#[track_caller]
fn assert_intact(lab: &Lab) {
    let seed = lab.seeded_orders().expect("backup readable");
    assert_eq!(seed.len(), shop::SEEDED_ORDERS);
    assert_eq!(
        orders(lab).as_deref(),
        Some(&seed[..]),
        "orders must be intact"
    );
    assert_eq!(
        lab.tables().expect("sqlite_master"),
        ["customers", "orders"],
        "no table may be dropped"
    );
}

async fn naive_call(lab: &Lab, sql: &str) -> CallToolResult {
    let client = connect(NaiveServer::new(&lab.db), ScriptedHuman::new(ERA))
        .await
        .expect("connect");
    let reply = call(&client, "run_sql", json!({ "sql": sql }))
        .await
        .expect("call");
    let _ = client.cancel().await;
    result(reply)
}

// ── 1. The incident ──────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn naive_run_sql_drops_orders() {
    let (_dir, lab) = lab();
    assert_eq!(lab.tables().unwrap(), ["customers", "orders"]);

    let client = connect(NaiveServer::new(&lab.db), ScriptedHuman::new(ERA))
        .await
        .unwrap();
    assert_eq!(tool_names(&client).await.unwrap(), ["run_sql"]);
    let dropped = result(
        call(&client, "run_sql", json!({ "sql": ATTACK }))
            .await
            .unwrap(),
    );
    let _ = client.cancel().await;

    assert!(!client::is_error(&dropped), "{}", client::text(&dropped));
    assert_eq!(
        lab.tables().unwrap(),
        ["customers"],
        "orders left sqlite_master"
    );
    assert_eq!(orders(&lab), None);
}

// ── 2. The restore ───────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn restore_brings_every_row_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.db");
    let copy = dir.path().join("backup.db");
    shop::create(&db).unwrap();
    // A row the seed does not have: finding it after the restore proves the rows come
    // from the backup, not from seeding again.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "INSERT INTO orders (id, customer_id, status, amount_cents) VALUES (2001, 2, 'paid', 777)",
            [],
        )
        .unwrap();
    backup::take(&db, &copy).unwrap();
    let before = shop::Snapshot::open(&db)
        .unwrap()
        .orders()
        .unwrap()
        .unwrap();
    assert_eq!(before.len(), shop::SEEDED_ORDERS + 1);

    let client = connect(NaiveServer::new(&db), ScriptedHuman::new(ERA))
        .await
        .unwrap();
    let dropped = call(&client, "run_sql", json!({ "sql": ATTACK }))
        .await
        .unwrap();
    let _ = client.cancel().await;
    assert!(!client::is_error(&result(dropped)));
    assert_eq!(shop::Snapshot::open(&db).unwrap().orders().unwrap(), None);

    backup::restore(&copy, &db).unwrap();

    let after = shop::Snapshot::open(&db).unwrap();
    assert_eq!(after.tables().unwrap(), ["customers", "orders"]);
    assert_eq!(
        after.orders().unwrap(),
        Some(before),
        "every row, every value"
    );
    assert_eq!(
        after.customers().unwrap(),
        Some(shop::SEEDED_CUSTOMERS as i64)
    );
}

// ── 3. The incident record ───────────────────────────────────────────────────────────────

#[test]
fn incident_record_names_cause_missing_layers_and_change() {
    let (_dir, lab) = lab();
    let incident = Incident {
        request: REQUEST.into(),
        sql: ATTACK.into(),
        database: lab.db.clone(),
        backup: lab.backup.clone(),
        orders_lost: 5,
        orders_restored: 5,
    };
    let path = incident.write(&lab.dir).unwrap();
    assert_eq!(path, lab.dir.join("incident.md"));
    let text = std::fs::read_to_string(&path).unwrap();

    let at: Vec<usize> = SECTIONS
        .iter()
        .map(|s| {
            text.find(&format!("\n{s}\n"))
                .unwrap_or_else(|| panic!("missing section {s}:\n{text}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "sections out of order");
    let section = |i: usize| &text[at[i]..at.get(i + 1).copied().unwrap_or(text.len())];

    assert!(section(0).contains(ATTACK) && section(0).contains("5 of 5 rows"));
    assert!(section(1).contains("tool design") && section(1).contains("run_sql"));
    for layer in ["Allowlist", "Read-only connection", "Confirmation"] {
        assert!(section(2).contains(layer), "missing layer {layer}");
    }
    for change in [
        "Narrow tools",
        "Allowlist",
        "Read-only connection",
        "Confirm round trip",
    ] {
        assert!(section(3).contains(change), "missing change {change}");
    }
}

// ── 4a. Layer: a read-only connection ────────────────────────────────────────────────────

#[tokio::test]
async fn read_only_connection_refuses_the_attack() {
    let (_dir, lab) = lab();
    let client = connect(ReadOnlySql::new(&lab.db).unwrap(), ScriptedHuman::new(ERA))
        .await
        .unwrap();

    let count = result(
        call(
            &client,
            "run_sql",
            json!({ "sql": "SELECT count(*) FROM orders" }),
        )
        .await
        .unwrap(),
    );
    assert!(!client::is_error(&count));
    assert_eq!(client::text(&count), shop::SEEDED_ORDERS.to_string());

    for sql in READ_ONLY_ATTACKS {
        let refused = result(
            call(&client, "run_sql", json!({ "sql": sql }))
                .await
                .unwrap(),
        );
        assert!(
            client::is_error(&refused),
            "{sql}: {}",
            client::text(&refused)
        );
        assert_eq!(
            client::code(&refused).as_deref(),
            Some(Code::ReadOnly.as_str()),
            "{sql}: {}",
            client::text(&refused)
        );
        assert_intact(&lab);
    }
    let _ = client.cancel().await;

    // The same multi-statement write through the naive server is a real attack.
    naive_call(&lab, "SELECT 1; DELETE FROM orders").await;
    assert_eq!(orders(&lab), Some(vec![]));
}

// ── 4b. Layer: the allowlist ─────────────────────────────────────────────────────────────

#[tokio::test]
async fn allowlist_hides_run_sql_like_a_tool_that_never_existed() {
    let (_dir, lab) = lab();
    assert!(
        Shop::defined_tools().contains(&"run_sql".to_owned()),
        "run_sql stays in the code"
    );
    let client = connect(Shop::open(&lab).unwrap(), ScriptedHuman::new(ERA))
        .await
        .unwrap();

    let mut enabled: Vec<&str> = ENABLED.to_vec();
    enabled.sort();
    assert_eq!(tool_names(&client).await.unwrap(), enabled);

    let attack = json!({ "sql": ATTACK });
    let hidden = call(&client, "run_sql", attack.clone())
        .await
        .unwrap()
        .expect_err("run_sql must be a JSON-RPC error");
    let unknown = call(&client, "no_such_tool", attack)
        .await
        .unwrap()
        .expect_err("an unknown tool is a JSON-RPC error");
    let _ = client.cancel().await;

    assert_eq!(hidden.code.0, -32602);
    assert_eq!(hidden.code, unknown.code);
    assert_eq!(hidden.message, unknown.message);
    assert_eq!(hidden.data, unknown.data);
    assert_intact(&lab);

    // Listing run_sql is all it takes to bring the attack back.
    std::fs::write(&lab.allowlist, "tools = [\"run_sql\"]\n").unwrap();
    let client = connect(Shop::open(&lab).unwrap(), ScriptedHuman::new(ERA))
        .await
        .unwrap();
    let dropped = result(
        call(&client, "run_sql", json!({ "sql": ATTACK }))
            .await
            .unwrap(),
    );
    let _ = client.cancel().await;
    assert!(!client::is_error(&dropped), "{}", client::text(&dropped));
    assert_eq!(orders(&lab), None);
}

// ── 4c. Layer: a narrow tool the human confirms ──────────────────────────────────────────

async fn delete_order(lab: &Lab, human: ScriptedHuman, args: serde_json::Value) -> Reply {
    let client = connect(Shop::open(lab).unwrap(), human).await.unwrap();
    let reply = call(&client, "delete_order", args).await.unwrap();
    let _ = client.cancel().await;
    reply
}

async fn narrow_tool(era: ProtocolVersion) {
    let (_dir, lab) = lab();
    let seed = lab.seeded_orders().unwrap();
    let target = seed.iter().find(|o| o.id == TEST_ORDER).unwrap().clone();

    // No table drop can be expressed: the only argument is an integer.
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Accept(json!({ "confirm": true })));
    let sneaky = result(
        delete_order(
            &lab,
            human.clone(),
            json!({ "id": "orders; DROP TABLE orders" }),
        )
        .await,
    );
    assert!(client::is_error(&sneaky), "{}", client::text(&sneaky));
    assert!(client::text(&sneaky).contains("expected i64"));
    assert!(human.shown().is_empty(), "nobody is asked about a bad call");
    assert_intact(&lab);

    // A client that cannot ask: nothing is deleted.
    let human = ScriptedHuman::without_elicitation(era.clone());
    let reply = result(delete_order(&lab, human.clone(), json!({ "id": TEST_ORDER })).await);
    assert!(!client::is_error(&reply), "{}", client::text(&reply));
    assert!(client::text(&reply).contains("Nothing was changed"));
    assert!(human.shown().is_empty());
    assert_intact(&lab);

    // The human declines, or closes the form: nothing is deleted.
    for answer in [Answer::Decline, Answer::Cancel] {
        let human = ScriptedHuman::new(era.clone());
        human.will(answer.clone());
        let reply = result(delete_order(&lab, human.clone(), json!({ "id": TEST_ORDER })).await);
        assert!(
            !client::is_error(&reply),
            "{answer:?}: {}",
            client::text(&reply)
        );
        assert!(
            client::text(&reply).contains("no order was deleted"),
            "{answer:?}"
        );
        assert_eq!(human.shown().len(), 1, "{answer:?}: asked once");
        assert_intact(&lab);
    }

    // The human accepts: exactly that one order is deleted.
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Accept(json!({ "confirm": true })));
    let reply = result(delete_order(&lab, human.clone(), json!({ "id": TEST_ORDER })).await);
    assert!(!client::is_error(&reply), "{}", client::text(&reply));
    let shown = human.shown();
    assert_eq!(shown.len(), 1);
    for part in [
        format!("#{TEST_ORDER}"),
        target.status.clone(),
        shop::dollars(target.amount_cents),
    ] {
        assert!(
            shown[0].message.contains(&part),
            "the preview names {part}: {}",
            shown[0].message
        );
    }
    let left = orders(&lab).unwrap();
    let expected: Vec<Order> = seed.into_iter().filter(|o| o.id != TEST_ORDER).collect();
    assert_eq!(left, expected, "exactly order #{TEST_ORDER} is gone");
    assert_eq!(ids(&left), [1001, 1002, 1004, 1005]);
    assert_eq!(lab.tables().unwrap(), ["customers", "orders"]);
}

#[tokio::test]
async fn narrow_tool_cannot_drop_and_waits_for_the_human_push() {
    narrow_tool(ProtocolVersion::V_2025_11_25).await;
}

#[tokio::test]
async fn narrow_tool_cannot_drop_and_waits_for_the_human_mrtr() {
    narrow_tool(ProtocolVersion::V_2026_07_28).await;
}

// ── 5. Undo instead of a backup ──────────────────────────────────────────────────────────

async fn undo_brings_the_dropped_table_back(era: ProtocolVersion) {
    let (_dir, lab) = lab();
    let backup = std::fs::read(&lab.backup).unwrap();
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Accept(json!({ "typed_name": "orders" })));
    let shop = Shop::open(&lab).unwrap();
    let client = connect(shop.clone(), human.clone()).await.unwrap();
    // Only the shop's own tables can be named.
    let other = result(
        call(&client, "drop_table", json!({ "table": "sqlite_master" }))
            .await
            .unwrap(),
    );
    assert_eq!(client::code(&other).as_deref(), Some("INVALID_INPUT"));
    let dropped = result(
        call(&client, "drop_table", json!({ "table": "orders" }))
            .await
            .unwrap(),
    );
    let _ = client.cancel().await;
    assert!(!client::is_error(&dropped), "{}", client::text(&dropped));
    let asked = &human.shown()[0].message;
    assert!(
        asked.contains("Drop table `orders` with its 5 rows."),
        "{asked}"
    );
    assert!(asked.contains("You can undo this until "), "{asked}");
    assert_eq!(orders(&lab), None, "the name is free");
    let trashed: Vec<String> = lab
        .all_tables()
        .unwrap()
        .into_iter()
        .filter(|t| rmcp_guard::db::trash::is_trashed(t))
        .collect();
    assert_eq!(trashed.len(), 1, "the rows wait in the trash");
    let meta = serde_json::to_value(&dropped.meta).unwrap();
    let id = meta["guard"]["operationId"]
        .as_str()
        .expect("an undo window");

    let client = connect(shop, ScriptedHuman::new(era)).await.unwrap();
    let undone = result(
        call(&client, "undo", json!({ "operation_id": id }))
            .await
            .unwrap(),
    );
    let _ = client.cancel().await;
    assert!(!client::is_error(&undone), "{}", client::text(&undone));
    assert_intact(&lab);
    assert_eq!(
        std::fs::read(&lab.backup).unwrap(),
        backup,
        "the backup untouched"
    );
}

#[tokio::test]
async fn undo_brings_the_dropped_table_back_push() {
    undo_brings_the_dropped_table_back(ProtocolVersion::V_2025_11_25).await;
}

#[tokio::test]
async fn undo_brings_the_dropped_table_back_mrtr() {
    undo_brings_the_dropped_table_back(ProtocolVersion::V_2026_07_28).await;
}

// ── The whole story ──────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn the_transcript_runs_clean_and_recreates_its_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join(".incident-lab");

    transcript::run(&workspace).await.expect("every step holds");
    for file in ["shop.db", "shop-backup.db", "allowlist.toml", "incident.md"] {
        assert!(workspace.join(file).exists(), "{file}");
    }

    // A second run recreates its own workspace.
    std::fs::write(workspace.join("stale.txt"), "from an earlier run").unwrap();
    transcript::run(&workspace)
        .await
        .expect("every step holds again");
    assert!(
        !workspace.join("stale.txt").exists(),
        "the workspace is recreated"
    );
}

#[test]
fn a_directory_the_lab_did_not_make_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("precious.txt");
    std::fs::write(&precious, "not the lab's").unwrap();

    let refused = Lab::prepare(dir.path()).expect_err("a foreign directory is refused");

    assert!(refused.contains("left alone"), "{refused}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "not the lab's");
}
