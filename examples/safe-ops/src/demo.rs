//! `safe-ops demo`: an in-process client plays the human for every outcome of every tool,
//! and the transcript shows what the model saw and what changed on disk and in the database.

use std::{collections::BTreeMap, path::Path};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, ProtocolVersion},
    service::RunningService,
};
use rmcp_guard::{
    Guard,
    audit::{AuditLog, CheckpointSigner},
    ops::SqliteStore,
    testing::{Answer, ScriptedHuman},
};
use serde_json::{Value, json};

use crate::{db, server::SafeOps};

const WORKSPACE: &str = ".safe-ops/demo";

/// What the demo can observe: files in the sandbox and rows per table.
#[derive(PartialEq)]
struct World {
    files: BTreeMap<String, u64>,
    tables: BTreeMap<String, i64>,
}

impl World {
    fn read(root: &Path, db_path: &Path) -> Result<Self, String> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(root).map_err(|e| e.to_string())? {
            let entry = entry.map_err(|e| e.to_string())?;
            let len = entry.metadata().map_err(|e| e.to_string())?.len();
            files.insert(entry.file_name().to_string_lossy().into_owned(), len);
        }
        let conn = rusqlite::Connection::open_with_flags(
            db_path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .map_err(|e| e.to_string())?;
        let mut tables = BTreeMap::new();
        for table in db::tables(&conn).map_err(|e| e.to_string())? {
            let rows = db::table_rows(&conn, &table)
                .map_err(|e| e.to_string())?
                .unwrap_or(0);
            tables.insert(table, rows);
        }
        Ok(Self { files, tables })
    }

    fn diff(&self, after: &World) -> Vec<String> {
        let mut out = Vec::new();
        for (name, len) in &self.files {
            if !after.files.contains_key(name) {
                out.push(format!("file {name} ({len} bytes) deleted"));
            }
        }
        for (table, rows) in &self.tables {
            match after.tables.get(table) {
                None => out.push(format!("table {table} ({rows} rows) dropped")),
                Some(now) if now != rows => out.push(format!("table {table}: {rows} → {now} rows")),
                _ => {}
            }
        }
        out
    }
}

struct Scene<'a> {
    tool: &'a str,
    args: Value,
    answer: Answer,
    title: &'a str,
}

pub async fn run() -> Result<(), String> {
    let workspace = Path::new(WORKSPACE);
    let _ = std::fs::remove_dir_all(workspace);
    let root = workspace.join("files");
    let db_path = workspace.join("safe-ops.db");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    for (name, text) in [
        ("old.log", "rotated log lines\n"),
        ("report.csv", "id,total\n1,1999\n"),
        ("a.tmp", "scratch a\n"),
        ("b.tmp", "scratch b\n"),
        ("c.tmp", "scratch c\n"),
    ] {
        std::fs::write(root.join(name), text).map_err(|e| e.to_string())?;
    }
    println!(
        "safe-ops demo — workspace {WORKSPACE} (files/, safe-ops.db, audit.db), recreated on every run\n"
    );
    let store = SqliteStore::open(workspace.join("audit.db")).map_err(|e| e.to_string())?;
    let log = AuditLog::new(store, "safe-ops demo");

    for (era, protocol) in [
        (
            "2025-11-25: push elicitation (elicitation/create)",
            ProtocolVersion::V_2025_11_25,
        ),
        (
            "2026-07-28: MRTR (InputRequiredResult + sealed requestState)",
            ProtocolVersion::V_2026_07_28,
        ),
    ] {
        println!("══ Protocol {era} ══\n");
        for scene in scenes(&protocol) {
            play(&root, &db_path, &log, &protocol, scene).await?;
        }
    }
    verify_log(workspace, &log).await
}

/// Signs a checkpoint of the demo's audit log and verifies the log against it, as
/// `guard-audit verify` does.
async fn verify_log(workspace: &Path, log: &AuditLog) -> Result<(), String> {
    let signer = CheckpointSigner::generate("safe-ops-demo").map_err(|e| e.to_string())?;
    let key = workspace.join("audit.key");
    let checkpoint = workspace.join("checkpoint.txt");
    let note = log.checkpoint(&signer).await.map_err(|e| e.to_string())?;
    std::fs::write(&key, signer.verifier().to_text()).map_err(|e| e.to_string())?;
    std::fs::write(&checkpoint, &note).map_err(|e| e.to_string())?;
    println!("══ Audit ══\n");
    println!("Every outcome above is one record of a tamper-evident log (audit.db); a checkpoint");
    println!("of it was signed into checkpoint.txt. Anyone holding both can check it offline:\n");
    println!(
        "$ guard-audit verify --db {} --checkpoint {} --key {}",
        workspace.join("audit.db").display(),
        checkpoint.display(),
        key.display()
    );
    let opened = signer.verifier().open(&note).map_err(|e| e.to_string())?;
    match log.verify(Some(&opened)).await {
        Ok(verified) => {
            println!(
                "OK: {verified} (checkpoint: {}, tree size {})",
                checkpoint.display(),
                opened.size
            );
            Ok(())
        }
        Err(error) => Err(format!("FAILED: {error}")),
    }
}

fn scenes(protocol: &ProtocolVersion) -> Vec<Scene<'static>> {
    let accept = |v: Value| Answer::Accept(v);
    // Each era deletes one file on accept; the refusals before it target the same file.
    let file = if *protocol == ProtocolVersion::V_2025_11_25 {
        "old.log"
    } else {
        "report.csv"
    };
    let mut scenes = vec![
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: Answer::Decline,
            title: "decline",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: Answer::Cancel,
            title: "cancel",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: accept(json!({"confirm": "true"})),
            title: "invalid form: the string \"true\" is not a ticked box",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": file}),
            answer: accept(json!({"confirm": false})),
            title: "box left unticked",
        },
        Scene {
            tool: "delete_file",
            args: json!({"path": "../../etc/passwd"}),
            answer: Answer::Cancel,
            title: "a path that escapes the sandbox",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: Answer::Decline,
            title: "decline",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: Answer::Cancel,
            title: "cancel",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: accept(json!({"typed_name": "Customers", "approver": "ada"})),
            title: "wrong typed name",
        },
        Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: accept(json!({"typed_name": "customers"})),
            title: "invalid form: approver missing",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: Answer::Decline,
            title: "decline",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: Answer::Cancel,
            title: "cancel",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: accept(json!({"approval_level": "urgent", "rollback_plan": "revert"})),
            title: "business rule: urgent needs a 10-character rollback plan",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: accept(json!({"approval_level": "asap", "rollback_plan": "redeploy v41"})),
            title: "invalid form: not an offered approval level",
        },
        Scene {
            tool: "deploy",
            args: json!({"service": "billing"}),
            answer: accept(
                json!({"approval_level": "urgent", "rollback_plan": "redeploy v41 from the registry"}),
            ),
            title: "accept",
        },
    ];
    // Accepts that remove something run last in each era, once per era.
    if *protocol == ProtocolVersion::V_2025_11_25 {
        scenes.push(Scene {
            tool: "delete_files",
            args: json!({"pattern": "*.tmp"}),
            answer: accept(json!({"items": ["a.tmp", "c.tmp"]})),
            title: "batch: the human picks two of the three matching files",
        });
        scenes.push(Scene {
            tool: "delete_file",
            args: json!({"path": "old.log"}),
            answer: accept(json!({"confirm": true, "reason": "rotated"})),
            title: "accept",
        });
        scenes.push(Scene {
            tool: "drop_table",
            args: json!({"table": "orders"}),
            answer: accept(json!({"typed_name": " orders ", "approver": "ada"})),
            title: "accept (outer spaces are trimmed)",
        });
    } else {
        scenes.push(Scene {
            tool: "delete_files",
            args: json!({"pattern": "*.tmp"}),
            answer: accept(json!({"items": ["a.tmp"]})),
            title: "batch: a pick that was not offered (a.tmp is gone) is refused",
        });
        scenes.push(Scene {
            tool: "delete_files",
            args: json!({"pattern": "*.tmp"}),
            answer: accept(json!({"items": []})),
            title: "batch: nothing picked, nothing changed",
        });
        scenes.push(Scene {
            tool: "delete_file",
            args: json!({"path": "report.csv"}),
            answer: accept(json!({"confirm": true})),
            title: "accept",
        });
        scenes.push(Scene {
            tool: "delete_file",
            args: json!({"path": "old.log"}),
            answer: Answer::Cancel,
            title: "precondition: the file is already gone, nobody is asked",
        });
        scenes.push(Scene {
            tool: "drop_table",
            args: json!({"table": "customers"}),
            answer: accept(json!({"typed_name": "customers", "approver": "grace"})),
            title: "accept",
        });
    }
    scenes
}

async fn play(
    root: &Path,
    db_path: &Path,
    log: &AuditLog,
    protocol: &ProtocolVersion,
    scene: Scene<'static>,
) -> Result<(), String> {
    let human = ScriptedHuman::new(protocol.clone());
    human.will(scene.answer.clone());
    let (client, guard) = connect(root, db_path, log, human.clone(), protocol).await?;
    let before = World::read(root, db_path)?;
    let Value::Object(arguments) = scene.args.clone() else {
        return Err("scene arguments must be an object".into());
    };
    let result = client
        .call_tool(CallToolRequestParams::new(scene.tool).with_arguments(arguments))
        .await
        .map_err(|e| format!("{} call failed: {e}", scene.tool))?;
    let after = World::read(root, db_path)?;
    let _ = client.cancel().await;
    guard.audit_settled().await;

    println!("── {} · {}", scene.tool, scene.title);
    println!("   model calls   {}({})", scene.tool, scene.args);
    match human.shown().first() {
        Some(shown) => {
            println!(
                "   human sees    {}",
                shown.message.replace('\n', "\n                 ")
            );
            println!("   human answers {}", describe(&scene.answer));
        }
        None => println!("   human sees    nothing (guard did not ask)"),
    }
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    let flag = if result.is_error == Some(true) {
        "isError "
    } else {
        ""
    };
    println!("   model sees    {flag}{}", text.join(" "));
    let changes = before.diff(&after);
    if changes.is_empty() {
        println!("   changed       nothing\n");
    } else {
        println!("   changed       {}\n", changes.join("; "));
    }
    Ok(())
}

fn describe(answer: &Answer) -> String {
    match answer {
        Answer::Accept(content) => format!("accept {content}"),
        Answer::Decline => "decline".into(),
        Answer::Cancel => "cancel (closed the form)".into(),
        Answer::Ignore => "nothing (walked away)".into(),
    }
}

async fn connect(
    root: &Path,
    db_path: &Path,
    log: &AuditLog,
    human: ScriptedHuman,
    protocol: &ProtocolVersion,
) -> Result<
    (
        RunningService<RoleClient, ScriptedHuman>,
        std::sync::Arc<Guard>,
    ),
    String,
> {
    let server = SafeOps::open(
        root,
        db_path,
        Guard::ephemeral()
            .map_err(|e| e.to_string())?
            .with_audit(log.clone()),
    )?;
    let guard = server.guard_config().clone();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = human
        .connect(client_io)
        .await
        .map_err(|e| format!("client failed to connect: {e}"))?;
    let negotiated = client.peer_info().map(|i| i.protocol_version.clone());
    if negotiated.as_ref() != Some(protocol) {
        return Err(format!(
            "the demo client negotiated {negotiated:?}, not {protocol}"
        ));
    }
    Ok((client, guard))
}
