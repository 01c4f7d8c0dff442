//! `order-cancel demo`: alice prepares and confirms a cancellation, confirms it again as a
//! timed-out client would, and the story goes on through the refusals: another tenant,
//! another user, an order that cannot be cancelled, an order that ships between prepare and
//! confirm. After each call it prints what the model saw and what the database holds.

use std::{path::Path, sync::Arc};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
};
use rmcp_guard::{
    EnvIdentity, Guard, Identity,
    audit::{Anchor, AuditLog, CheckpointSigner, LocalWitness},
    ops::{DEFAULT_ORIGIN, OperationStore, Operations, SqlValue, SqliteStore, StoreError},
    user_dirs::UserDirs,
};
use serde_json::{Value, json};

use crate::{OrderCancel, schema, stores};

const WORKSPACE: &str = ".order-cancel/demo";
const SCOPE: &str = "order.cancel.request";

type Client = RunningService<RoleClient, ()>;

struct Demo {
    store: Arc<SqliteStore>,
}

pub async fn run() -> Result<(), String> {
    let _ = std::fs::remove_dir_all(WORKSPACE);
    let path = Path::new(WORKSPACE).join("orders.db");
    let store = stores::open_sqlite(&path, schema::DEMO_ORDERS)
        .await
        .map_err(|e| e.to_string())?;
    let demo = Demo {
        store: Arc::new(store),
    };
    println!(
        "order-cancel demo — SQLite store {}, recreated on every run\n",
        path.display()
    );
    demo.orders().await?;

    let alice = demo.client("tenant_demo", "alice").await?;
    println!("══ 1. alice (tenant_demo) asks to cancel A10001 ══");
    let prepared = demo
        .call(
            &alice,
            "prepare_order_cancel",
            json!({"order_no": "A10001", "reason": "customer changed their mind"}),
        )
        .await?;
    let id = prepared
        .structured_content
        .as_ref()
        .and_then(|b| b["operation_id"].as_str())
        .ok_or("the prepare returned no operation_id")?
        .to_owned();

    println!("══ 2. the user agrees; the client confirms ══");
    demo.call(&alice, "confirm_order_cancel", json!({"operation_id": id}))
        .await?;

    println!("══ 3. the answer timed out; the client retries with the same operation_id ══");
    demo.call(&alice, "confirm_order_cancel", json!({"operation_id": id}))
        .await?;

    println!("══ 4. did it happen? ══");
    demo.call(&alice, "get_operation_result", json!({"operation_id": id}))
        .await?;

    println!("══ 5. someone in another tenant replays alice's operation_id ══");
    let mallory = demo.client("tenant_other", "mallory").await?;
    demo.call(
        &mallory,
        "confirm_order_cancel",
        json!({"operation_id": id}),
    )
    .await?;

    println!("══ 6. bob, in alice's tenant, tries to confirm it ══");
    let bob = demo.client("tenant_demo", "bob").await?;
    demo.call(&bob, "confirm_order_cancel", json!({"operation_id": id}))
        .await?;

    println!("══ 7. alice asks to cancel A10003, which has shipped ══");
    demo.call(
        &alice,
        "prepare_order_cancel",
        json!({"order_no": "A10003", "reason": "too slow"}),
    )
    .await?;

    println!("══ 8. alice prepares A10002; the warehouse ships it before she confirms ══");
    let prepared = demo
        .call(
            &alice,
            "prepare_order_cancel",
            json!({"order_no": "A10002", "reason": "ordered twice"}),
        )
        .await?;
    let second = prepared
        .structured_content
        .as_ref()
        .and_then(|b| b["operation_id"].as_str())
        .ok_or("the prepare returned no operation_id")?
        .to_owned();
    demo.exec("UPDATE orders SET status = 'SHIPPED' WHERE order_no = 'A10002'")
        .await?;
    println!("   (warehouse: A10002 → SHIPPED)\n");
    demo.call(
        &alice,
        "confirm_order_cancel",
        json!({"operation_id": second}),
    )
    .await?;

    println!("══ The database at the end ══");
    demo.orders().await?;
    demo.audit(&id).await?;
    demo.verify_log(Path::new(WORKSPACE)).await
}

impl Demo {
    /// A server whose caller is `user` of `tenant` (as `GUARD_TENANT`/`GUARD_USER` would set
    /// it for a stdio server), connected in process.
    async fn client(&self, tenant: &str, user: &str) -> Result<Client, String> {
        let identity = EnvIdentity::new(Identity::new(tenant, user, [SCOPE]));
        let guard = Guard::ephemeral()
            .map_err(|e| e.to_string())?
            .with_operations(Operations::new(self.store.clone(), identity));
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = OrderCancel::new(guard).serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        ().serve(client_io).await.map_err(|e| e.to_string())
    }

    async fn call(
        &self,
        client: &Client,
        tool: &str,
        args: Value,
    ) -> Result<CallToolResult, String> {
        println!("   model → {tool} {args}");
        let Value::Object(arguments) = args else {
            return Err("arguments must be an object".into());
        };
        let result = client
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
            .await
            .map_err(|e| format!("{tool}: {e}"))?;
        match (&result.structured_content, result.is_error) {
            (Some(body), _) => {
                let pretty = serde_json::to_string_pretty(body).map_err(|e| e.to_string())?;
                println!("   model ← {}", pretty.replace('\n', "\n           "));
            }
            _ => {
                for block in &result.content {
                    if let Some(text) = block.as_text() {
                        println!("   model ← isError: {}", text.text);
                    }
                }
            }
        }
        println!("   database: {}\n", self.requests().await?);
        Ok(result)
    }

    async fn exec(&self, sql: &str) -> Result<(), String> {
        let run = async {
            let mut tx = self.store.begin().await?;
            tx.execute(sql, &[]).await?;
            tx.commit().await
        };
        run.await.map_err(|e: StoreError| e.to_string())
    }

    async fn rows(
        &self,
        sql: &str,
        params: &[SqlValue],
    ) -> Result<Vec<rmcp_guard::ops::Row>, String> {
        let run = async {
            let mut tx = self.store.begin().await?;
            let rows = tx.query(sql, params).await?;
            tx.rollback().await?;
            Ok::<_, StoreError>(rows)
        };
        run.await.map_err(|e| e.to_string())
    }

    async fn requests(&self) -> Result<String, String> {
        let requests = self
            .rows(
                "SELECT request_id, order_id FROM order_cancel_requests ORDER BY request_id",
                &[],
            )
            .await?;
        let list: Vec<String> = requests
            .iter()
            .map(|r| {
                format!(
                    "#{} for order {}",
                    r.int("request_id").unwrap_or_default(),
                    r.int("order_id").unwrap_or_default()
                )
            })
            .collect();
        Ok(format!(
            "{} cancellation request(s){}",
            list.len(),
            if list.is_empty() {
                String::new()
            } else {
                format!(": {}", list.join(", "))
            }
        ))
    }

    async fn orders(&self) -> Result<(), String> {
        println!("   orders:");
        for r in self
            .rows(
                "SELECT tenant, order_no, status, total_cents FROM orders ORDER BY order_id",
                &[],
            )
            .await?
        {
            println!(
                "     {:<13} {}  {:<8} {:>7.2}",
                r.text("tenant").unwrap_or_default(),
                r.text("order_no").unwrap_or_default(),
                r.text("status").unwrap_or_default(),
                r.int("total_cents").unwrap_or_default() as f64 / 100.0
            );
        }
        println!();
        Ok(())
    }

    /// Has the store's audit log witnessed and verifies it against the checkpoint the witness
    /// cosigned, as `guard-audit verify --policy` does. The log's key and the witness's live
    /// under the user's configuration directory, made on the first run and kept, never beside
    /// the database; the witness answers on loopback with its own state (in production it is
    /// `guard-audit witness`, run by someone the database's owner does not control).
    async fn verify_log(&self, workspace: &Path) -> Result<(), String> {
        let log = AuditLog::new(self.store.clone(), DEFAULT_ORIGIN);
        let keys = UserDirs::new("order-cancel")?.config().join("audit");
        let signer =
            CheckpointSigner::from_file_or_generate(&keys.join("log.key"), "order-cancel-demo")?;
        let witness = LocalWitness::start(
            DEFAULT_ORIGIN,
            &signer.verifier(),
            &keys.join("witness.key"),
            &workspace.join("witness-state.json"),
        )
        .await?;
        let policy = workspace.join("policy.txt");
        std::fs::write(&policy, witness.policy_text()).map_err(|e| e.to_string())?;
        let anchor = Anchor::new(log.clone(), signer, &witness.policy())?;
        anchor.checkpoint().await.map_err(|e| e.to_string())?;
        if let Some(error) = anchor.status().into_iter().find_map(|s| s.error) {
            return Err(format!("the demo's witness did not cosign: {error}"));
        }
        let checked = witness.verify(&log).await;
        witness.stop().await;
        let (verified, witnessed) = checked.map_err(|e| format!("FAILED: {e}"))?;
        println!();
        println!("══ Audit ══");
        println!("   every answer above is one record of the store's tamper-evident log. A");
        println!(
            "   checkpoint signed with the log key in {} was cosigned by a witness with",
            keys.display()
        );
        println!("   its own key and state. Anyone holding the policy checks it offline:\n");
        println!(
            "$ guard-audit verify --db {} --policy {}",
            workspace.join("orders.db").display(),
            policy.display()
        );
        println!(
            "OK: {verified} (checkpoint: cosigned by {}, tree size {})",
            witnessed.cosigned_by.join(", "),
            witnessed.checkpoint.size
        );
        Ok(())
    }

    async fn audit(&self, operation_id: &str) -> Result<(), String> {
        println!("   audit trail of operation {operation_id}:");
        let rows = self
            .rows(
                "SELECT tool, tenant, user_id, outcome FROM guard_audit_log
                 WHERE operation_id = $1 ORDER BY seq",
                &[operation_id.into()],
            )
            .await?;
        for r in rows {
            println!(
                "     {:<22} {}/{:<8} {}",
                r.text("tool").unwrap_or_default(),
                r.text("tenant").unwrap_or_default(),
                r.text("user_id").unwrap_or_default(),
                r.text("outcome").unwrap_or_default()
            );
        }
        Ok(())
    }
}
