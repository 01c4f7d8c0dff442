//! `safe-ops demo`: an in-process client plays the human for every outcome of every tool,
//! and the transcript shows what the model saw and what changed on disk and in the database.
//! The production deploy goes through the approval page: the demo reads the page over HTTP as
//! the requester sees it, and two other people approve there through their own links.

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, CustomNotification,
        ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
        FormElicitationCapability, Implementation, ProtocolVersion, UrlElicitationCapability,
    },
    service::{
        ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
    },
};
use rmcp_guard::{
    Guard, Identity,
    approval::WebhookNotifier,
    audit::AuditLog,
    ops::SqliteStore,
    testing::{Answer, ScriptedHuman},
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{db, receiver::Receiver, server::SafeOps, visit};

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
    let log = AuditLog::new(store, crate::witnessed::ORIGIN);

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
        production(&root, &db_path, &log, &protocol).await?;
    }
    crate::witnessed::verify_log(workspace, &log).await
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
        Scene {
            tool: "deploy",
            args: json!({"service": "billing", "environment": "production"}),
            answer: Answer::Cancel,
            title: "production is not deploy's: it names deploy_production",
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

/// The production deploy: the client is sent to the approval page, the requester reads it
/// there, each approver's link arrives by signed webhook at a receiver on this host (never
/// where the requester's client could read it), two other people approve through their own
/// links, and the deploy runs once.
async fn production(
    root: &Path,
    db_path: &Path,
    log: &AuditLog,
    protocol: &ProtocolVersion,
) -> Result<(), String> {
    let secret = webhook_secret()?;
    let receiver = Receiver::start(secret.clone()).await?;
    let notifier = WebhookNotifier::new(&receiver.url(), secret).map_err(|e| e.to_string())?;
    let requester = Identity::new("demo", "alice", Vec::<String>::new());
    let approvers = ["bob".to_owned(), "carol".to_owned()];
    let page = crate::approval::start(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        requester,
        &approvers,
        Some(Box::new(notifier)),
    )
    .await?;
    let guard = Guard::ephemeral()
        .map_err(|e| e.to_string())?
        .with_audit(log.clone())
        .with_approval_page(page);
    let server = SafeOps::open(root, db_path, guard)?;
    let guard = server.guard_config().clone();
    let (urls, mut sent_to) = mpsc::unbounded_channel();
    let visitor = PageClient {
        protocol: protocol.clone(),
        urls,
        completed: Arc::default(),
    };
    let client = connect_to(server, visitor.clone(), protocol).await?;
    let before = World::read(root, db_path)?;
    let args = json!({"service": "billing"});
    let Value::Object(arguments) = args.clone() else {
        return Err("scene arguments must be an object".into());
    };
    let call = tokio::spawn(async move {
        let result = client
            .call_tool(CallToolRequestParams::new("deploy_production").with_arguments(arguments))
            .await;
        let _ = client.cancel().await;
        result
    });
    let (message, url) = tokio::time::timeout(Duration::from_secs(30), sent_to.recv())
        .await
        .map_err(|_| "the client was never sent to the approval page".to_owned())?
        .ok_or("the client closed before it was sent to the approval page")?;

    println!("── deploy_production · two people approve on the approval page");
    println!("   model calls   deploy_production({args})");
    println!("   human sees    {}", indent(&message));
    println!("                 [Open {url}]");
    println!("   human answers accept (opens the page)");
    let seen = visit::get(&url).await?;
    println!("   page shows    {}", indent(&seen.text()));
    let mut delivered = Vec::new();
    for who in &approvers {
        let link = receiver
            .link_for(who, Duration::from_secs(10))
            .await
            .ok_or_else(|| format!("no link reached {who}"))?;
        delivered.push((who, link));
    }
    println!(
        "   links         {} signed POSTs to the receiver at {}: {} verified, {} refused;",
        delivered.len(),
        receiver.url(),
        receiver.links().len(),
        receiver.refused()
    );
    println!("                 the requester's client saw none of them");
    for (who, link) in &delivered {
        println!("   {who:<13} opens the link delivered to {who}, types billing, presses Approve");
        let after = visit::approve(&link.url, "billing").await?;
        let text = after.text();
        let shown: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("Approvals:")
                    || l.starts_with("Waiting for")
                    || l.starts_with("Approved:")
                    || l.starts_with("Not approved")
            })
            .collect();
        println!("   page shows    {}", shown.join(" · "));
    }
    let result = call
        .await
        .map_err(|e| format!("the deploy_production call did not finish: {e}"))?
        .map_err(|e| format!("deploy_production call failed: {e}"))?;
    guard.audit_settled().await;
    let after = World::read(root, db_path)?;
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
    let completed = visitor
        .completed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .len();
    if completed > 0 {
        println!("   client gets   notifications/elicitation/complete");
    }
    println!("   model sees    {flag}{}", text.join(" "));
    let changes = before.diff(&after);
    if changes.is_empty() {
        println!("   changed       nothing\n");
    } else {
        println!("   changed       {}\n", changes.join("; "));
    }
    Ok(())
}

/// A fresh signing secret shared by the page and the receiver, as an operator would put in
/// `SAFE_OPS_WEBHOOK_SECRET`.
fn webhook_secret() -> Result<Vec<u8>, String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| format!("cannot read the system random source: {e}"))?;
    Ok(bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .into_bytes())
}

fn indent(text: &str) -> String {
    text.replace('\n', "\n                 ")
}

/// A client that declares URL elicitation and sends the human to every page it is given.
#[derive(Clone)]
struct PageClient {
    protocol: ProtocolVersion,
    urls: mpsc::UnboundedSender<(String, String)>,
    completed: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for PageClient {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                let _ = self.urls.send((message, url));
                Ok(ElicitResult::new(ElicitationAction::Accept))
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == "notifications/elicitation/complete" {
            self.completed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(notification.method);
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        elicitation.url = Some(UrlElicitationCapability::new());
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(capabilities, Implementation::new("safe-ops-demo", "0.1.0"))
            .with_protocol_version(self.protocol.clone())
    }
}

/// Serves `server` in process and connects `client` to it in `protocol`'s era.
async fn connect_to<C: ClientHandler>(
    server: SafeOps,
    client: C,
    protocol: &ProtocolVersion,
) -> Result<RunningService<RoleClient, C>, String> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let lifecycle = if protocol.has_initialize() {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![protocol.clone()],
        }
    };
    client
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .map_err(|e| format!("client failed to connect: {e}"))
}
