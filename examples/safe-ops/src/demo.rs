//! `safe-ops demo`: an in-process client plays the human for every outcome of every tool,
//! and the transcript shows what the model saw and what changed on disk and in the database.
//! Each era undoes a delete (and the first a drop) within its window; at the end the clock
//! passes the windows, the purge empties the trash, and an undo is refused.
//! The production deploy goes through the approval page: the demo reads the page over HTTP as
//! the requester sees it, and two other people approve there through their own links; on
//! 2026-07-28 safe-ops restarts between the two approvals. Last, a download link is made
//! after the human accepts, opened over HTTP, and refused once altered.

use std::{
    collections::BTreeMap,
    future::Future,
    net::SocketAddr,
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
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
    EnvIdentity, Guard, Identity,
    approval::WebhookNotifier,
    db::trash::is_trashed,
    grant::{Revoked, Revoker},
    ops::{Operations, SqliteStore},
    person::Person,
    sandbox::TRASH,
    testing::{Answer, ScriptedHuman},
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{db, receiver::Receiver, server::SafeOps, visit};

const WORKSPACE: &str = ".safe-ops/demo";

/// How long safe-ops' deletes and drops can be undone (their `undo_within`).
const UNDO_WINDOW_MS: i64 = 10 * 60 * 1000;

/// What the demo can observe: files in the sandbox, rows per table, and how many deleted
/// files and dropped tables wait in the trash for their undo.
#[derive(PartialEq)]
struct World {
    files: BTreeMap<String, u64>,
    tables: BTreeMap<String, i64>,
    trash: usize,
}

impl World {
    fn read(root: &Path, db_path: &Path) -> Result<Self, String> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(root).map_err(|e| e.to_string())? {
            let entry = entry.map_err(|e| e.to_string())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == TRASH {
                continue;
            }
            let meta = entry.metadata().map_err(|e| e.to_string())?;
            if !meta.is_dir() {
                files.insert(name, meta.len());
                continue;
            }
            // One folder down: the grant's scenes delete inside `logs/`.
            for inner in std::fs::read_dir(entry.path()).map_err(|e| e.to_string())? {
                let inner = inner.map_err(|e| e.to_string())?;
                let len = inner.metadata().map_err(|e| e.to_string())?.len();
                files.insert(
                    format!("{name}/{}", inner.file_name().to_string_lossy()),
                    len,
                );
            }
        }
        let trashed_files = match std::fs::read_dir(root.join(TRASH)) {
            Ok(entries) => entries.count(),
            Err(_) => 0,
        };
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
        let mut names = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .map_err(|e| e.to_string())?;
        let trashed_tables = names
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| e.to_string())?
            .filter(|name| name.as_ref().is_ok_and(|n| is_trashed(n)))
            .count();
        Ok(Self {
            files,
            tables,
            trash: trashed_files + trashed_tables,
        })
    }

    fn diff(&self, after: &World) -> Vec<String> {
        let mut out = Vec::new();
        for (name, len) in &self.files {
            if !after.files.contains_key(name) {
                out.push(format!("file {name} ({len} bytes) deleted"));
            }
        }
        for (name, len) in &after.files {
            if !self.files.contains_key(name) {
                out.push(format!("file {name} ({len} bytes) back"));
            }
        }
        for (table, rows) in &self.tables {
            match after.tables.get(table) {
                None => out.push(format!("table {table} ({rows} rows) dropped")),
                Some(now) if now != rows => out.push(format!("table {table}: {rows} → {now} rows")),
                _ => {}
            }
        }
        for (table, rows) in &after.tables {
            if !self.tables.contains_key(table) {
                out.push(format!("table {table} ({rows} rows) back"));
            }
        }
        if self.trash != after.trash {
            out.push(format!(
                "waiting in the trash: {} → {}",
                self.trash, after.trash
            ));
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

/// One step of an era: a scene, or `undo` of the last effect that named one.
enum Step {
    Call(Scene<'static>),
    UndoLast(&'static str),
}

impl Step {
    /// The scene to play, `undo`'s given the last operation id an effect named.
    fn scene(self, last: Option<&str>) -> Result<Scene<'static>, String> {
        match self {
            Step::Call(scene) => Ok(scene),
            Step::UndoLast(title) => Ok(Scene {
                tool: "undo",
                args: json!({"operation_id": last.ok_or("no effect named an undo before this scene")?}),
                answer: Answer::Cancel,
                title,
            }),
        }
    }
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
    std::fs::create_dir_all(root.join("logs")).map_err(|e| e.to_string())?;
    for n in 1..=GRANTED_LOGS {
        std::fs::write(root.join(format!("logs/{n}.log")), format!("log {n}\n"))
            .map_err(|e| e.to_string())?;
    }
    println!(
        "safe-ops demo — workspace {WORKSPACE} (files/, safe-ops.db, audit.db), recreated on every run\n"
    );
    let store = SqliteStore::open(workspace.join("audit.db")).map_err(|e| e.to_string())?;
    let log = operations(&store).audit_log().clone();
    let mut last_undo = None;

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
        for step in steps(&protocol) {
            let scene = step.scene(last_undo.as_deref())?;
            if let Some(id) = play(&root, &db_path, &store, &protocol, scene).await? {
                last_undo = Some(id);
            }
        }
        production(&root, &db_path, &store, &protocol).await?;
    }
    println!("══ Undo windows close ══\n");
    purge(&root, &db_path, &store).await?;
    let scene = Step::UndoLast("after its window closed").scene(last_undo.as_deref())?;
    play(
        &root,
        &db_path,
        &store,
        &ProtocolVersion::V_2026_07_28,
        scene,
    )
    .await?;
    grants(&root, &db_path, &store).await?;
    download_link(&root, &db_path, &store).await?;
    crate::witnessed::verify_log(workspace, &log).await
}

/// A capability, asked for: the human accepts a link to `report.csv`, the link downloads the
/// file over HTTP from the endpoint safe-ops serves, and the same link with one character of
/// its signature changed is refused.
async fn download_link(root: &Path, db_path: &Path, store: &SqliteStore) -> Result<(), String> {
    println!("══ A download link: a capability, asked for ══\n");
    let server = SafeOps::open(root, db_path, guard(store)?)?;
    let links = crate::downloads::serve(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        server.sandbox().clone(),
    )
    .await?;
    let scene = Scene {
        tool: "create_download_link",
        args: json!({"path": "report.csv", "minutes": 5}),
        answer: Answer::Accept(json!({"confirm": true})),
        title: "accept: whoever holds the link downloads the file",
    };
    let era = ProtocolVersion::V_2025_11_25;
    let (_, answer) = play_on(server.with_downloads(links), root, db_path, &era, scene).await?;
    let link = answer
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .ok_or_else(|| format!("create_download_link answered no link: {answer}"))?;
    let opened = visit::get(link).await?;
    println!("── the link · opened over HTTP, then with one character of its signature changed");
    println!("   link opens    HTTP {}: {:?}", opened.status, opened.html);
    let last = link.chars().last().unwrap_or('0');
    let altered = format!(
        "{}{}",
        &link[..link.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    let refused = visit::get(&altered).await?;
    println!(
        "   altered link  HTTP {}: {}\n",
        refused.status,
        refused.html.trim_end()
    );
    Ok(())
}

/// The files in `logs/` the grant's scenes delete: one that opens the grant, five it
/// covers, one after it is used up that opens another, and one after that is revoked.
const GRANTED_LOGS: usize = 8;

/// A grant instead of a question per file: alice deletes `logs/1.log` and grants up to five
/// more deletes in `logs/` for ten minutes; those five run unasked and say so; the sixth
/// asks again (the grant is used up) and she grants again; she revokes that grant, and the
/// next delete asks again.
async fn grants(root: &Path, db_path: &Path, store: &SqliteStore) -> Result<(), String> {
    println!("══ A grant instead of a question per file ══\n");
    let era = ProtocolVersion::V_2025_11_25;
    let delete = |n: usize, answer: Answer, title: &'static str| Scene {
        tool: "delete_file",
        args: json!({"path": format!("logs/{n}.log")}),
        answer,
        title,
    };
    let grant = || Answer::Accept(json!({"confirm": true, "guard_grant": "grant"}));
    let scene = delete(
        1,
        grant(),
        "accept, and grant up to 5 more deletes in logs/",
    );
    play(root, db_path, store, &era, scene).await?;
    for n in 2..=6 {
        let scene = delete(n, Answer::Cancel, "covered by the grant: nobody is asked");
        play(root, db_path, store, &era, scene).await?;
    }
    let scene = delete(
        7,
        grant(),
        "the grant is used up: asked again, and granted again",
    );
    play(root, db_path, store, &era, scene).await?;

    let guard = guard(store)?;
    let grants = guard.grants().ok_or("the demo's guard keeps no grants")?;
    let alice = Person::new("demo", "alice").map_err(|e| e.to_string())?;
    let now = rmcp_guard::ops::now_ms();
    let held = grants
        .held_by(&alice, now, 10)
        .await
        .map_err(|e| e.to_string())?;
    let open = held
        .iter()
        .find(|g| g.active_at(now))
        .ok_or("alice holds no grant that covers calls")?;
    let revoked = grants
        .revoke(&open.grant_id, Revoker::Holder(&alice), now, "demo-revoke")
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "── revoke · alice revokes the new grant (her approval inbox lists it, with a Revoke button)"
    );
    match revoked {
        Revoked::Now(grant) => println!(
            "   revoked       {}: it covers no call from now on ({} of {} used)\n",
            grant.grant_id, grant.used, grant.calls
        ),
        other => return Err(format!("the grant was not revoked now: {other:?}")),
    }
    guard.audit_settled().await;
    let scene = delete(
        8,
        Answer::Decline,
        "after the revocation: asked again, and declined",
    );
    play(root, db_path, store, &era, scene).await?;
    Ok(())
}

/// The demo's guarded calls: made by alice of tenant `demo`, with undo windows and approvals
/// in the store that holds the audit log.
fn operations(store: &SqliteStore) -> Operations {
    let requester = Identity::new("demo", "alice", Vec::<String>::new());
    Operations::new(store.clone(), EnvIdentity::new(requester))
        .audit_origin(crate::witnessed::ORIGIN)
}

/// A guard for one scene's server, on the demo's store.
fn guard(store: &SqliteStore) -> Result<Guard, String> {
    Ok(Guard::ephemeral()
        .map_err(|e| e.to_string())?
        .with_operations(operations(store)))
}

/// The undo windows' ten minutes pass: the purge makes what still waits in the trash final,
/// each window once, and a second pass finds nothing.
async fn purge(root: &Path, db_path: &Path, store: &SqliteStore) -> Result<(), String> {
    let server = SafeOps::open(root, db_path, guard(store)?)?;
    let before = World::read(root, db_path)?;
    let later = rmcp_guard::ops::now_ms() + UNDO_WINDOW_MS + 1;
    let purged = server.purge_due_undo_windows(later).await?;
    let again = server.purge_due_undo_windows(later).await?;
    server.guard_config().audit_settled().await;
    let after = World::read(root, db_path)?;
    println!("── purge · the clock passes the 10-minute undo windows");
    println!(
        "   purge         {purged} windows still open made final (their trash emptied); a second pass purges {again}"
    );
    let changes = before.diff(&after);
    println!("   changed       {}\n", changes.join("; "));
    Ok(())
}

fn steps(protocol: &ProtocolVersion) -> Vec<Step> {
    let accept = Answer::Accept;
    // Each era deletes one file on accept; the refusals before it target the same file.
    let file = if *protocol == ProtocolVersion::V_2025_11_25 {
        "old.log"
    } else {
        "report.csv"
    };
    let scenes = vec![
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
    let mut steps: Vec<Step> = scenes.into_iter().map(Step::Call).collect();
    // Accepts that remove something run last in each era, once per era; each era undoes one.
    let accept_scene = |tool, args, answer, title| {
        Step::Call(Scene {
            tool,
            args,
            answer: accept(answer),
            title,
        })
    };
    if *protocol == ProtocolVersion::V_2025_11_25 {
        steps.extend([
            accept_scene(
                "delete_files",
                json!({"pattern": "*.tmp"}),
                json!({"items": ["a.tmp", "c.tmp"]}),
                "batch: the human picks two of the three matching files",
            ),
            accept_scene(
                "delete_file",
                json!({"path": "old.log"}),
                json!({"confirm": true, "reason": "rotated"}),
                "accept",
            ),
            Step::UndoLast("the delete, within its window"),
            accept_scene(
                "drop_table",
                json!({"table": "orders"}),
                json!({"typed_name": " orders ", "approver": "ada"}),
                "accept (outer spaces are trimmed)",
            ),
            Step::UndoLast("the drop, within its window: every row comes back"),
        ]);
    } else {
        steps.extend([
            accept_scene(
                "delete_files",
                json!({"pattern": "*.tmp"}),
                json!({"items": ["a.tmp"]}),
                "batch: a pick that was not offered (a.tmp is gone) is refused",
            ),
            accept_scene(
                "delete_files",
                json!({"pattern": "*.tmp"}),
                json!({"items": []}),
                "batch: nothing picked, nothing changed",
            ),
            accept_scene(
                "delete_file",
                json!({"path": "report.csv"}),
                json!({"confirm": true}),
                "accept",
            ),
            Step::UndoLast("the delete, within its window"),
            Step::UndoLast("twice: the first result, nothing runs again"),
            accept_scene(
                "delete_file",
                json!({"path": "old.log"}),
                json!({"confirm": true}),
                "accept, not undone",
            ),
            Step::Call(Scene {
                tool: "delete_file",
                args: json!({"path": "old.log"}),
                answer: Answer::Cancel,
                title: "precondition: the file is already gone, nobody is asked",
            }),
            accept_scene(
                "drop_table",
                json!({"table": "customers"}),
                json!({"typed_name": "customers", "approver": "grace"}),
                "accept, not undone",
            ),
        ]);
    }
    steps
}

/// Plays `scene` on a fresh server and client; the operation id of the undo window its
/// effect opened, if it opened one.
async fn play(
    root: &Path,
    db_path: &Path,
    store: &SqliteStore,
    protocol: &ProtocolVersion,
    scene: Scene<'static>,
) -> Result<Option<String>, String> {
    let server = SafeOps::open(root, db_path, guard(store)?)?;
    let (opened, _) = play_on(server, root, db_path, protocol, scene).await?;
    Ok(opened)
}

/// Plays `scene` on `server` and a fresh client; the operation id of the undo window its
/// effect opened, if it opened one, and the text the model saw.
async fn play_on(
    server: SafeOps,
    root: &Path,
    db_path: &Path,
    protocol: &ProtocolVersion,
    scene: Scene<'static>,
) -> Result<(Option<String>, String), String> {
    let human = ScriptedHuman::new(protocol.clone());
    human.will(scene.answer.clone());
    let (client, guard) = connect(server, human.clone(), protocol).await?;
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
            if let Some(offer) =
                shown.schema["properties"]["guard_grant"]["oneOf"][1]["title"].as_str()
            {
                println!("   or may choose {offer}");
            }
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
    let text = text.join(" ");
    println!("   model sees    {flag}{}", indent(&text));
    print_changes(&before, &after);
    let opened = serde_json::to_value(&result.meta)
        .ok()
        .and_then(|meta| meta["guard"]["operationId"].as_str().map(str::to_owned))
        .filter(|_| scene.tool != "undo");
    Ok((opened, text))
}

fn print_changes(before: &World, after: &World) {
    let changes = before.diff(after);
    if changes.is_empty() {
        println!("   changed       nothing\n");
    } else {
        println!("   changed       {}\n", changes.join("; "));
    }
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
    server: SafeOps,
    human: ScriptedHuman,
    protocol: &ProtocolVersion,
) -> Result<
    (
        RunningService<RoleClient, ScriptedHuman>,
        std::sync::Arc<Guard>,
    ),
    String,
> {
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
/// links, and the deploy runs once. On 2026-07-28 safe-ops restarts between the two
/// approvals: the approval and its links live in the store, so the second approver uses the
/// link delivered before the restart, and the requester's next call runs the deploy.
async fn production(
    root: &Path,
    db_path: &Path,
    store: &SqliteStore,
    protocol: &ProtocolVersion,
) -> Result<(), String> {
    let secret = random_secret()?;
    let receiver = Receiver::start(secret.clone()).await?;
    let approvers = ["bob".to_owned(), "carol".to_owned()];
    let restarts = !protocol.has_initialize();
    // What GUARD_HMAC_KEY is to a deployment: the server after the restart has it too.
    let key = random_secret()?;
    let start = |bind: SocketAddr| {
        let notifier = WebhookNotifier::new(&receiver.url(), secret.clone());
        let (key, approvers) = (key.clone(), approvers.clone());
        async move {
            let notifier = notifier.map_err(|e| e.to_string())?;
            let requester = Identity::new("demo", "alice", Vec::<String>::new());
            let page =
                crate::approval::start(bind, requester, &approvers, Some(Box::new(notifier)))
                    .await?;
            let addr = page.local_addr();
            let guard = Guard::with_key(key)
                .map_err(|e| e.to_string())?
                .with_operations(operations(store))
                // Rounds end soon, so the stopped server lets go of its page at once.
                .approval_round_wait(Duration::from_secs(1))
                .with_approval_page(page);
            Ok::<_, String>((SafeOps::open(root, db_path, guard)?, addr))
        }
    };
    let (server, page_addr) = start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let guard = server.guard_config().clone();
    let (urls, mut sent_to) = mpsc::unbounded_channel();
    let visitor = PageClient {
        protocol: protocol.clone(),
        urls,
        completed: Arc::default(),
        parks: restarts,
        asked: Arc::default(),
    };
    let client = connect_to(server, visitor.clone(), protocol).await?;
    let before = World::read(root, db_path)?;
    let args = json!({"service": "billing"});
    let Value::Object(arguments) = args.clone() else {
        return Err("scene arguments must be an object".into());
    };
    let request = CallToolRequestParams::new("deploy_production").with_arguments(arguments);
    let first_call = request.clone();
    let call = tokio::spawn(async move {
        let result = client.call_tool(first_call).await;
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
    let before_restart = if restarts { 1 } else { delivered.len() };
    for (who, link) in &delivered[..before_restart] {
        approve(who, &link.url, "").await?;
    }
    let (result, guard, visitor) = if restarts {
        // The requester is away (their client waits on the next question, asked once the
        // round after bob's approval ended); then the process goes, with their call. What
        // it knew of the approval is in the store.
        tokio::time::timeout(Duration::from_secs(30), sent_to.recv())
            .await
            .map_err(|_| "the requester's call never came back for another round".to_owned())?;
        call.abort();
        drop(guard);
        let (server, _) = restart(page_addr, start).await?;
        println!(
            "   restart       safe-ops stops with the approval pending (1 of 2) and starts again on the same"
        );
        println!(
            "                 store and key; its page answers on the same address ({page_addr})"
        );
        let guard = server.guard_config().clone();
        for (who, link) in &delivered[before_restart..] {
            approve(who, &link.url, ", delivered before the restart").await?;
        }
        let (urls, _sent_to) = mpsc::unbounded_channel();
        let visitor = PageClient {
            protocol: protocol.clone(),
            urls,
            completed: Arc::default(),
            parks: false,
            asked: Arc::default(),
        };
        let client = connect_to(server, visitor.clone(), protocol).await?;
        println!("   model calls   deploy_production({args}) again, on the restarted server");
        let result = client.call_tool(request).await;
        let _ = client.cancel().await;
        (result, guard, visitor)
    } else {
        let result = call
            .await
            .map_err(|e| format!("the deploy_production call did not finish: {e}"))?;
        (result, guard, visitor)
    };
    let result = result.map_err(|e| format!("deploy_production call failed: {e}"))?;
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
    print_changes(&before, &after);
    Ok(())
}

/// `who` approves through the link delivered to them; the page's verdict lines.
async fn approve(who: &str, link: &str, note: &str) -> Result<(), String> {
    println!(
        "   {who:<13} opens the link delivered to {who}{note}, types billing, presses Approve"
    );
    let after = visit::approve(link, "billing").await?;
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
    Ok(())
}

/// Starts the server again with its page on `addr`, once the stopped one let go of it.
async fn restart<F, Fut>(addr: SocketAddr, start: F) -> Result<(SafeOps, SocketAddr), String>
where
    F: Fn(SocketAddr) -> Fut,
    Fut: Future<Output = Result<(SafeOps, SocketAddr), String>>,
{
    let mut tries = 0;
    loop {
        match start(addr).await {
            Ok(started) => return Ok(started),
            Err(error) if tries == 100 => {
                return Err(format!(
                    "the restarted approval page cannot listen on {addr} again: {error}"
                ));
            }
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// A fresh random secret (64 hex characters), as an operator would put in
/// `SAFE_OPS_WEBHOOK_SECRET` or `GUARD_HMAC_KEY`.
fn random_secret() -> Result<Vec<u8>, String> {
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
    /// Whether the requester stops answering after the first question: a process that
    /// goes away then has no request of theirs in flight.
    parks: bool,
    asked: Arc<AtomicUsize>,
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
                let earlier = self.asked.fetch_add(1, Ordering::SeqCst);
                if self.parks && earlier > 0 {
                    // The requester is away: this question waits until the process goes.
                    std::future::pending::<()>().await;
                }
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
