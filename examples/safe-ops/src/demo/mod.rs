//! `safe-ops demo`: an in-process client plays the human for every outcome of every tool,
//! and the transcript shows what the model saw and what changed on disk and in the database.
//! Each era undoes a delete (and the first a drop) within its window; at the end a purge pass
//! finds no window due (the store's clock decides, and the windows are ten minutes long), so
//! the last drop is still undone.
//! The production deploy goes through the approval page: the demo reads the page over HTTP as
//! the requester sees it, and two other people approve there through their own links; on
//! 2026-07-28 safe-ops restarts between the two approvals. Last, a download link is made
//! after the human accepts, opened over HTTP, and refused once altered.
//!
//! The world the demo observes, the scenes and how one is played are here; each era's
//! scenes are in `scenes`, the production deploy on the approval page in `production`, the
//! grant in `grants` and the download link in `download_link`.

mod download_link;
mod grants;
mod production;
mod scenes;

use std::{collections::BTreeMap, path::Path};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, ProtocolVersion},
    service::RunningService,
};
use rmcp_guard::{
    EnvIdentity, Guard, Identity,
    db::trash::is_trashed,
    ops::{Operations, SqliteStore},
    sandbox::TRASH,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

use crate::{db, server::SafeOps};
use download_link::download_link;
use grants::{GRANTED_LOGS, grants};
use production::production;
use scenes::steps;

const WORKSPACE: &str = ".safe-ops/demo";

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
    println!("══ The purge waits for the undo windows ══\n");
    purge(&root, &db_path, &store).await?;
    let scene = Step::UndoLast("after the purge pass: its window is still open")
        .scene(last_undo.as_deref())?;
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

/// A purge pass while the undo windows are open: what is due is the store's clock's to say,
/// against each window's deadline, so nothing the demo could pass makes a window final
/// early, and what waits in the trash stays.
async fn purge(root: &Path, db_path: &Path, store: &SqliteStore) -> Result<(), String> {
    let server = SafeOps::open(root, db_path, guard(store)?)?;
    let before = World::read(root, db_path)?;
    let purged = server.purge_due_undo_windows().await?;
    server.guard_config().audit_settled().await;
    let after = World::read(root, db_path)?;
    println!("── purge · one pass, minutes before the 10-minute undo windows close");
    println!(
        "   purge         {purged} windows due: the {} waiting in the trash can be undone until 10 minutes after their effect, by the store's clock; `safe-ops` purges every 30 seconds and makes each final once it closed",
        before.trash
    );
    print_changes(&before, &after);
    Ok(())
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

fn indent(text: &str) -> String {
    text.replace('\n', "\n                 ")
}
