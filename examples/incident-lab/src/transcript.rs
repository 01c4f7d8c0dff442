//! `incident-lab`: the story as a transcript. Every step checks what it claims; a layer that
//! fails to stop the attack is printed with ✗ and makes the run fail.

use std::path::Path;

use rmcp::model::ProtocolVersion;
use rmcp_guard::Code;
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::json;

use crate::{
    ATTACK, Lab, REQUEST,
    client::{self, Reply, call, connect, describe, tool_names},
    layers::{ReadOnlySql, Shop},
    naive::NaiveServer,
    record::{Incident, SECTIONS},
    shop::{Order, dollars},
};

/// The protocol era the lab's client speaks (rmcp's default).
pub const ERA: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// Writes that must never get through a read-only connection.
pub const READ_ONLY_ATTACKS: [&str; 3] = [
    ATTACK,
    "SELECT 1; DELETE FROM orders",
    "WITH doomed AS (SELECT id FROM orders) DELETE FROM orders WHERE id IN doomed",
];

/// The order the narrow tool deletes when the human agrees: a test order.
pub const TEST_ORDER: i64 = 1003;

/// What the run saw go wrong.
#[derive(Default)]
struct Checks {
    failed: Vec<String>,
}

impl Checks {
    fn expect(&mut self, ok: bool, what: impl Into<String>) {
        let what = what.into();
        if ok {
            println!("   ✓ {what}");
        } else {
            println!("   ✗ {what}");
            self.failed.push(what);
        }
    }
}

/// Runs the whole story in `dir` (recreated) and prints it. `Err` lists every step that did
/// not behave as the story says.
pub async fn run(dir: &Path) -> Result<(), String> {
    let lab = Lab::prepare(dir)?;
    let seed = lab.seeded_orders()?;
    let mut checks = Checks::default();
    println!(
        "incident-lab — workspace {} (shop.db, shop-backup.db, allowlist.toml, incident.md), recreated on every run",
        dir.display()
    );
    println!("   protocol {ERA}, in-process rmcp client and server over a duplex pipe\n");

    incident(&lab, &seed, &mut checks).await?;
    restore(&lab, &seed, &mut checks)?;
    record(&lab, &seed, &mut checks)?;
    read_only_layer(&lab, &seed, &mut checks).await?;
    allowlist_layer(&lab, &seed, &mut checks).await?;
    narrow_tool_layer(&lab, &seed, &mut checks).await?;
    undo_instead_of_backup(&lab, &seed, &mut checks).await?;

    if checks.failed.is_empty() {
        println!(
            "Every layer held: the same attack was stopped three times; the only deletion was the one the human confirmed, and the confirmed drop came back by undo."
        );
        Ok(())
    } else {
        Err(format!(
            "{} check(s) failed:\n  - {}",
            checks.failed.len(),
            checks.failed.join("\n  - ")
        ))
    }
}

fn heading(title: &str) {
    println!("══ {title} ══\n");
}

fn list_orders(orders: &[Order]) -> String {
    orders
        .iter()
        .map(|o| format!("#{} {} {}", o.id, o.status, dollars(o.amount_cents)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn model_calls(tool: &str, args: &serde_json::Value, reply: &Reply) {
    println!("   model calls   {tool}({args})");
    println!(
        "   model sees    {}",
        describe(reply).replace('\n', "\n                 ")
    );
}

/// `orders` still holds exactly the seeded rows.
fn intact(lab: &Lab, seed: &[Order], checks: &mut Checks) -> Result<(), String> {
    let orders = lab.orders()?;
    checks.expect(
        orders.as_deref() == Some(seed),
        format!(
            "orders intact: {} of {} rows, unchanged",
            orders.as_ref().map_or(0, Vec::len),
            seed.len()
        ),
    );
    println!();
    Ok(())
}

async fn incident(lab: &Lab, seed: &[Order], checks: &mut Checks) -> Result<(), String> {
    heading("1 · The incident: a naive run_sql server");
    println!(
        "   backup        {} taken with SQLite's online backup API, before anything happens",
        lab.backup.display()
    );
    let client = connect(NaiveServer::new(&lab.db), ScriptedHuman::new(ERA)).await?;
    println!("   tools/list    {:?}", tool_names(&client).await?);
    let before = lab.tables()?;
    println!(
        "   sqlite_master {before:?}   (orders: {})",
        list_orders(seed)
    );
    println!("   user asks     \"{REQUEST}\"");
    let args = json!({ "sql": ATTACK });
    let reply = call(&client, "run_sql", args.clone()).await?;
    let _ = client.cancel().await;
    model_calls("run_sql", &args, &reply);
    let after = lab.tables()?;
    println!("   sqlite_master {after:?}");
    checks.expect(
        before.iter().any(|t| t == "orders") && !after.iter().any(|t| t == "orders"),
        "orders is gone from sqlite_master",
    );
    println!();
    Ok(())
}

fn restore(lab: &Lab, seed: &[Order], checks: &mut Checks) -> Result<(), String> {
    heading("2 · Restore from the backup");
    lab.restore()?;
    println!(
        "   restored      {} → {} (online backup API)",
        lab.backup.display(),
        lab.db.display()
    );
    println!("   sqlite_master {:?}", lab.tables()?);
    let orders = lab.orders()?.unwrap_or_default();
    println!("   orders        {}", list_orders(&orders));
    checks.expect(
        orders == seed,
        format!("every row is back: {} of {}", orders.len(), seed.len()),
    );
    println!();
    Ok(())
}

fn record(lab: &Lab, seed: &[Order], checks: &mut Checks) -> Result<(), String> {
    heading("3 · The incident record");
    let restored = lab.orders()?.map_or(0, |o| o.len());
    let incident = Incident {
        request: REQUEST.into(),
        sql: ATTACK.into(),
        database: lab.db.clone(),
        backup: lab.backup.clone(),
        orders_lost: seed.len(),
        orders_restored: restored,
    };
    let path = incident
        .write(&lab.dir)
        .map_err(|e| format!("cannot write the incident record: {e}"))?;
    let written = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    println!("   {}:\n", path.display());
    for line in written.lines() {
        println!("   │ {line}");
    }
    println!();
    checks.expect(
        SECTIONS.iter().all(|s| written.contains(s)),
        "the record names the cause, the missing layers and the change",
    );
    println!();
    Ok(())
}

async fn read_only_layer(lab: &Lab, seed: &[Order], checks: &mut Checks) -> Result<(), String> {
    heading("4a · Layer: a read-only connection (same run_sql, ReadDb: mode=ro + query_only)");
    lab.restore()?;
    let client = connect(ReadOnlySql::new(&lab.db)?, ScriptedHuman::new(ERA)).await?;
    let read = json!({ "sql": "SELECT count(*) FROM orders" });
    let reply = call(&client, "run_sql", read.clone()).await?;
    model_calls("run_sql", &read, &reply);
    checks.expect(
        matches!(&reply, Ok(r) if !client::is_error(r)),
        "reads still work",
    );
    for sql in READ_ONLY_ATTACKS {
        let args = json!({ "sql": sql });
        let reply = call(&client, "run_sql", args.clone()).await?;
        model_calls("run_sql", &args, &reply);
        checks.expect(
            matches!(&reply, Ok(r) if client::is_error(r) && client::code(r).as_deref() == Some(Code::ReadOnly.as_str())),
            "refused by the engine: isError, code READ_ONLY",
        );
    }
    let _ = client.cancel().await;
    intact(lab, seed, checks)
}

async fn allowlist_layer(lab: &Lab, seed: &[Order], checks: &mut Checks) -> Result<(), String> {
    heading("4b · Layer: the allowlist (run_sql defined in code, not listed)");
    lab.restore()?;
    let allowlist = std::fs::read_to_string(&lab.allowlist)
        .map_err(|e| format!("cannot read {}: {e}", lab.allowlist.display()))?;
    println!("   {}  {}", lab.allowlist.display(), allowlist.trim_end());
    println!("   defined       {:?}", Shop::defined_tools());
    let client = connect(Shop::open(lab)?, ScriptedHuman::new(ERA)).await?;
    let listed = tool_names(&client).await?;
    println!("   tools/list    {listed:?}");
    checks.expect(
        !listed.iter().any(|t| t == "run_sql"),
        "run_sql is not in tools/list",
    );
    let attack = json!({ "sql": ATTACK });
    let hidden = call(&client, "run_sql", attack.clone()).await?;
    model_calls("run_sql", &attack, &hidden);
    let unknown = call(&client, "no_such_tool", attack.clone()).await?;
    model_calls("no_such_tool", &attack, &unknown);
    let _ = client.cancel().await;
    checks.expect(
        matches!(&hidden, Err(e) if e.code.0 == -32602),
        "tools/call run_sql is a -32602 error",
    );
    checks.expect(
        matches!((&hidden, &unknown), (Err(a), Err(b)) if a.code == b.code && a.message == b.message && a.data == b.data),
        "the same code, message and data as a tool that never existed",
    );
    intact(lab, seed, checks)
}

async fn narrow_tool_layer(lab: &Lab, seed: &[Order], checks: &mut Checks) -> Result<(), String> {
    heading("4c · Layer: a narrow tool, delete_order(id), confirmed by the human");
    lab.restore()?;
    let shop = Shop::open(lab)?;

    // The schema: one integer. There is no way to say "drop a table".
    let client = connect(shop.clone(), ScriptedHuman::new(ERA)).await?;
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let schema = tools
        .iter()
        .find(|t| t.name == "delete_order")
        .map(|t| serde_json::Value::Object((*t.input_schema).clone()));
    println!(
        "   input schema  {}",
        schema
            .as_ref()
            .map(|s| s["properties"].to_string())
            .unwrap_or_default()
    );
    let sneaky = json!({ "id": "orders; DROP TABLE orders" });
    let reply = call(&client, "delete_order", sneaky.clone()).await?;
    let _ = client.cancel().await;
    model_calls("delete_order", &sneaky, &reply);
    checks.expect(
        matches!(&reply, Ok(r) if client::is_error(r)
            && client::code(r).as_deref() == Some("INVALID_INPUT")
            && client::text(r).contains("expected i64")),
        "argument validation refuses a string where the order number goes",
    );
    intact(lab, seed, checks)?;

    let target = seed
        .iter()
        .find(|o| o.id == TEST_ORDER)
        .ok_or("the seed has no test order")?;
    let args = json!({ "id": TEST_ORDER });
    let scenes: [(&str, ScriptedHuman); 3] = [
        (
            "a client without elicitation: nobody can be asked",
            ScriptedHuman::without_elicitation(ERA),
        ),
        ("the human declines", {
            let human = ScriptedHuman::new(ERA);
            human.will(Answer::Decline);
            human
        }),
        ("the human ticks the box and accepts", {
            let human = ScriptedHuman::new(ERA);
            human.will(Answer::Accept(json!({ "confirm": true })));
            human
        }),
    ];
    for (i, (title, human)) in scenes.into_iter().enumerate() {
        println!("── {title}");
        let client = connect(shop.clone(), human.clone()).await?;
        let reply = call(&client, "delete_order", args.clone()).await?;
        let _ = client.cancel().await;
        println!("   model calls   delete_order({args})");
        match human.shown().first() {
            Some(shown) => println!(
                "   human sees    {}",
                shown.message.replace('\n', "\n                 ")
            ),
            None => println!("   human sees    nothing (guard did not ask)"),
        }
        println!("   model sees    {}", describe(&reply));
        let accepted = i == 2;
        if accepted {
            let shown = human.shown();
            let preview = shown.first().map(|s| s.message.as_str()).unwrap_or("");
            checks.expect(
                preview.contains(&format!("#{}", target.id))
                    && preview.contains(&target.status)
                    && preview.contains(&dollars(target.amount_cents)),
                format!(
                    "the human saw the order number, status and amount ({})",
                    target.describe()
                ),
            );
            let expected: Vec<Order> = seed
                .iter()
                .filter(|o| o.id != TEST_ORDER)
                .cloned()
                .collect();
            let orders = lab.orders()?;
            checks.expect(
                orders.as_deref() == Some(&expected[..]),
                format!(
                    "exactly order #{TEST_ORDER} is gone: {}",
                    list_orders(orders.as_deref().unwrap_or_default())
                ),
            );
            println!();
        } else {
            checks.expect(
                matches!(&reply, Ok(r) if !client::is_error(r)),
                "a plain result, not an error",
            );
            intact(lab, seed, checks)?;
        }
    }
    Ok(())
}

/// The drop a human confirmed by mistake: the table waits in the trash, and `undo` brings
/// every row back; the backup is not touched.
async fn undo_instead_of_backup(
    lab: &Lab,
    seed: &[Order],
    checks: &mut Checks,
) -> Result<(), String> {
    heading(
        "5 · Undo instead of a backup: drop_table(table), typed to confirm, undoable for 10 minutes",
    );
    lab.restore()?;
    let backup = lab.backup_bytes()?;
    let shop = Shop::open(lab)?;
    let human = ScriptedHuman::new(ERA);
    human.will(Answer::Accept(json!({ "typed_name": "orders" })));
    let client = connect(shop.clone(), human.clone()).await?;
    let args = json!({ "table": "orders" });
    let reply = call(&client, "drop_table", args.clone()).await?;
    let _ = client.cancel().await;
    println!("   model calls   drop_table({args})");
    if let Some(shown) = human.shown().first() {
        println!(
            "   human sees    {}",
            shown.message.replace('\n', "\n                 ")
        );
    }
    println!("   human answers types orders");
    println!("   model sees    {}", describe(&reply));
    println!("   sqlite_master {:?}", lab.all_tables()?);
    checks.expect(
        !lab.tables()?.iter().any(|t| t == "orders")
            && lab
                .all_tables()?
                .iter()
                .any(|t| rmcp_guard::db::trash::is_trashed(t)),
        "orders left its name; its rows wait in the trash, nothing deleted",
    );
    let operation_id = reply
        .as_ref()
        .ok()
        .and_then(|r| serde_json::to_value(&r.meta).ok())
        .and_then(|meta| meta["guard"]["operationId"].as_str().map(str::to_owned))
        .ok_or("the drop's result names no undo")?;
    let client = connect(shop, ScriptedHuman::new(ERA)).await?;
    let undo = json!({ "operation_id": operation_id });
    let undone = call(&client, "undo", undo.clone()).await?;
    let _ = client.cancel().await;
    model_calls("undo", &undo, &undone);
    println!("   sqlite_master {:?}", lab.all_tables()?);
    checks.expect(
        matches!(&undone, Ok(r) if !client::is_error(r)),
        "undo answers a plain result",
    );
    checks.expect(
        lab.backup_bytes()? == backup,
        "the backup was not needed: not read back, not changed",
    );
    intact(lab, seed, checks)
}
