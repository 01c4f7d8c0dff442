//! safe-ops' `delete_file` declares an undo: the file goes into the sandbox's trash, the
//! question says until when it can be undone, the model's result names the `undo` call, and
//! `undo` restores the same bytes and mode, for its owner, once, never over a new file; after
//! the window the purge deletes the trashed copy once and `undo` answers `UNDO_EXPIRED`.
//! `drop_table` declares one too: the table waits in the database under a trash name, rows
//! and all, and `undo` renames it back, never over a new table of that name.
//! Real rmcp clients on both eras, a server whose guard keeps its windows in SQLite.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::support::*;
use rmcp::model::{CallToolResult, ProtocolVersion};
use rmcp_guard::{ops::SqliteStore, outcome::Outcome};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use safe_ops::SafeOps;
use serde_json::{Value, json};

both_eras!(
    undo_restores_the_same_bytes_and_mode,
    the_question_states_the_terms_from_the_declaration,
    the_result_names_the_undo,
    a_second_undo_answers_with_the_first_result,
    another_person_gets_not_found,
    a_new_file_under_the_name_is_never_overwritten,
    a_copy_rewritten_in_the_trash_is_not_restored,
    a_restore_cut_short_before_its_commit_is_undone_next_time,
    after_the_window_the_purge_runs_once_and_undo_is_expired,
    a_restart_between_the_delete_and_the_undo_keeps_the_window,
    the_trash_is_out_of_reach_of_the_other_tools,
    a_dropped_table_comes_back_with_its_rows,
    a_new_table_under_the_name_is_never_replaced,
    after_the_window_the_dropped_table_is_purged_once,
    a_trashed_table_is_out_of_reach_of_the_other_tools,
    an_undo_the_allowlist_hides_is_never_promised,
    the_log_holds_the_effect_before_its_undo,
);

/// safe-ops on `world` with its undo windows in the world's store, calls made by `user`.
fn server_for(world: &World, user: &str) -> SafeOps {
    server_on(world, world.operations_store(), user)
}

fn server_on(world: &World, store: SqliteStore, user: &str) -> SafeOps {
    world.server_with(operations_guard(store, user))
}

fn accept() -> Answer {
    Answer::Accept(json!({"confirm": true}))
}

/// Deletes `old.log` as `alice` on a fresh connection; the result and what the human saw.
async fn delete(world: &World, era: &ProtocolVersion) -> (CallToolResult, ScriptedHuman) {
    let human = ScriptedHuman::new(era.clone());
    human.will(accept());
    let client = connect(server_for(world, "alice"), human.clone()).await;
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    let _ = client.cancel().await;
    (result, human)
}

/// The window's id, from guard's tag on the delete's result.
fn operation_id(result: &CallToolResult) -> String {
    let meta = serde_json::to_value(&result.meta).expect("meta");
    meta["guard"]["operationId"]
        .as_str()
        .unwrap_or_else(|| panic!("the delete's result names no undo window: {meta}"))
        .to_owned()
}

/// `undo` of `id` as `user`, on a fresh connection to a fresh server on the world's store.
async fn undo(world: &World, era: &ProtocolVersion, user: &str, id: &str) -> CallToolResult {
    let client = connect(server_for(world, user), ScriptedHuman::new(era.clone())).await;
    let result = call(&client, "undo", json!({"operation_id": id})).await;
    let _ = client.cancel().await;
    result
}

/// Makes window `id` due: the test's own connection to the store, with SQLite's triggers
/// off for that connection alone, moves the window back by its length, so its deadline
/// passed by the database's clock. No purge takes a time; guard's connections keep every
/// rule (a window's deadline never moves for them).
fn make_due(world: &World, id: &str) {
    let conn = rusqlite::Connection::open(world.base.join("operations.db")).expect("store");
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER,
        false,
    )
    .expect("triggers off for this connection");
    let moved = conn
        .execute(
            "UPDATE guard_undo SET created_at = 2 * created_at - expires_at - 1,
                 expires_at = created_at - 1
             WHERE operation_id = ?1 AND status = 'OPEN'",
            [id],
        )
        .expect("move the window back");
    assert_eq!(moved, 1, "window {id} is open");
}

/// The names in the sandbox's trash.
fn trashed(world: &World) -> Vec<String> {
    match std::fs::read_dir(world.path(rmcp_guard::sandbox::TRASH)) {
        Ok(entries) => entries
            .map(|e| {
                e.expect("trash entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

async fn undo_restores_the_same_bytes_and_mode(era: ProtocolVersion) {
    let world = World::new();
    let path = world.path("old.log");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let before = std::fs::metadata(&path).expect("old.log");
    let (result, _) = delete(&world, &era).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.file("old.log"), None, "the file left its name");
    assert_eq!(trashed(&world).len(), 1, "it waits in the trash");
    let undone = undo(&world, &era, "alice", &operation_id(&result)).await;
    assert_natural(&undone, Outcome::Undone);
    assert_eq!(
        world.file("old.log").as_deref(),
        Some(OLD_LOG),
        "same bytes"
    );
    let after = std::fs::metadata(&path).expect("restored");
    assert_eq!(after.mode() & 0o7777, 0o640, "same mode");
    assert_eq!(
        (after.dev(), after.ino()),
        (before.dev(), before.ino()),
        "the same file"
    );
    assert!(trashed(&world).is_empty(), "nothing left in the trash");
}

async fn the_question_states_the_terms_from_the_declaration(era: ProtocolVersion) {
    let world = World::new();
    let (_, human) = delete(&world, &era).await;
    let shown = human.shown();
    assert_eq!(shown.len(), 1, "{shown:?}");
    let message = &shown[0].message;
    assert!(
        message.contains("\n\nYou can undo this until "),
        "{message}"
    );
    assert!(
        message.ends_with(" UTC with undo; after that it is final."),
        "{message}"
    );
    assert!(!message.contains("cannot be undone"), "{message}");
    // deploy declares no undo: its question keeps the final terms.
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Decline);
    let client = connect(server_for(&world, "alice"), human.clone()).await;
    let _ = call(&client, "deploy", json!({"service": "billing"})).await;
    let _ = client.cancel().await;
    let shown = human.shown();
    assert!(
        shown[0].message.contains("\n\nThis cannot be undone."),
        "{}",
        shown[0].message
    );
    assert!(
        !shown[0].message.contains("undo this"),
        "{}",
        shown[0].message
    );
    // Without a store to keep windows in, delete_file cannot promise an undo either.
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Decline);
    let client = connect(world.server(), human.clone()).await;
    let _ = call(&client, "delete_file", json!({"path": "report.csv"})).await;
    let _ = client.cancel().await;
    let shown = human.shown();
    assert!(
        shown[0].message.ends_with("\n\nThis cannot be undone."),
        "{}",
        shown[0].message
    );
}

async fn the_result_names_the_undo(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = delete(&world, &era).await;
    let id = operation_id(&result);
    let said = text(&result);
    assert!(said.starts_with("Deleted old.log."), "{said}");
    assert!(
        said.contains(&format!(
            "To undo this, call undo with operation_id {id} before "
        )),
        "{said}"
    );
    assert!(said.ends_with("; after that it is final."), "{said}");
    assert!(
        !said.contains(world.root.to_str().expect("utf-8 root")),
        "{said}"
    );
}

async fn a_second_undo_answers_with_the_first_result(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = delete(&world, &era).await;
    let id = operation_id(&result);
    let first = undo(&world, &era, "alice", &id).await;
    assert_natural(&first, Outcome::Undone);
    // The file is deleted by hand meanwhile: a second undo must not restore anything.
    std::fs::remove_file(world.path("old.log")).expect("rm");
    let second = undo(&world, &era, "alice", &id).await;
    assert_natural(&second, Outcome::AlreadyUndone);
    let result_of = |r: &CallToolResult| -> Value {
        r.structured_content.clone().expect("structured")["result"].clone()
    };
    assert_eq!(result_of(&second), result_of(&first));
    assert_eq!(world.file("old.log"), None, "nothing ran again");
}

async fn another_person_gets_not_found(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = delete(&world, &era).await;
    let id = operation_id(&result);
    let theirs = undo(&world, &era, "mallory", &id).await;
    let unknown = undo(
        &world,
        &era,
        "mallory",
        "00000000-0000-4000-8000-000000000000",
    )
    .await;
    assert_refused(
        &theirs,
        rmcp_guard::Code::OperationNotFound,
        Outcome::Refused(rmcp_guard::Code::OperationNotFound),
    );
    assert_eq!(
        text(&theirs).replace(&id, "ID"),
        text(&unknown).replace("00000000-0000-4000-8000-000000000000", "ID"),
        "another person's window reads exactly like one that never existed"
    );
    assert_eq!(world.file("old.log"), None, "nothing restored for them");
    // The same person under another spelling of the name is the owner.
    let own = undo(&world, &era, "ALICE", &id).await;
    assert_natural(&own, Outcome::Undone);
}

async fn a_new_file_under_the_name_is_never_overwritten(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = delete(&world, &era).await;
    let id = operation_id(&result);
    std::fs::write(world.path("old.log"), "a new file\n").expect("new file");
    let refused = undo(&world, &era, "alice", &id).await;
    assert_refused(
        &refused,
        rmcp_guard::Code::StateChanged,
        Outcome::UndoRefused,
    );
    assert_eq!(
        world.file("old.log").as_deref(),
        Some("a new file\n"),
        "not overwritten"
    );
    assert_eq!(trashed(&world).len(), 1, "the deleted file still waits");
    // The window stays open: once the name is free again, the undo restores.
    std::fs::remove_file(world.path("old.log")).expect("free the name");
    let undone = undo(&world, &era, "alice", &id).await;
    assert_natural(&undone, Outcome::Undone);
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
}

/// A trashed copy rewritten in place to the same size, its modification time set back,
/// is not the file that was deleted: its change time moved, so `undo` refuses and leaves
/// the name free.
async fn a_copy_rewritten_in_the_trash_is_not_restored(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = delete(&world, &era).await;
    let id = operation_id(&result);
    let name = trashed(&world).pop().expect("a trashed file");
    let copy = world.path(rmcp_guard::sandbox::TRASH).join(name);
    let before = std::fs::metadata(&copy).expect("the trashed copy");
    let forged = "X".repeat(OLD_LOG.len());
    std::fs::write(&copy, &forged).expect("rewrite in place");
    std::fs::File::options()
        .write(true)
        .open(&copy)
        .and_then(|f| f.set_modified(before.modified()?))
        .expect("set the modification time back");
    let after = std::fs::metadata(&copy).expect("the trashed copy");
    assert_eq!(
        (after.len(), after.modified().ok(), after.ino()),
        (before.len(), before.modified().ok(), before.ino()),
        "same size, modification time and inode"
    );
    let refused = undo(&world, &era, "alice", &id).await;
    let expired = Outcome::Refused(rmcp_guard::Code::UndoExpired);
    assert_refused(&refused, rmcp_guard::Code::UndoExpired, expired);
    assert!(
        text(&refused).contains("was changed in the trash"),
        "{}",
        text(&refused)
    );
    assert_eq!(world.file("old.log"), None, "nothing restored");
    // The window ended with its reason: it is not left open for ever.
    let again = undo(&world, &era, "alice", &id).await;
    assert_refused(&again, rmcp_guard::Code::UndoExpired, expired);
    assert!(
        text(&again).contains("ended at") && text(&again).contains("was changed in the trash"),
        "{}",
        text(&again)
    );
    assert_eq!(world.file("old.log"), None, "nothing restored");
}

/// A restore killed after its rename and before its commit leaves the file back under its
/// name and the window open: the next undo finds the very file there and closes the window
/// as undone, audited, instead of saying nothing was restored.
async fn a_restore_cut_short_before_its_commit_is_undone_next_time(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = delete(&world, &era).await;
    let id = operation_id(&result);
    let name = trashed(&world).pop().expect("a trashed file");
    let copy = world.path(rmcp_guard::sandbox::TRASH).join(name);
    std::fs::rename(&copy, world.path("old.log")).expect("the restore's rename");
    let undone = undo(&world, &era, "alice", &id).await;
    assert_natural(&undone, Outcome::Undone);
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    let again = undo(&world, &era, "alice", &id).await;
    assert_natural(&again, Outcome::AlreadyUndone);
}

async fn after_the_window_the_purge_runs_once_and_undo_is_expired(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = delete(&world, &era).await;
    let id = operation_id(&result);
    let server = server_for(&world, "alice");
    assert_eq!(server.purge_due_undo_windows().await, Ok(0), "not due yet");
    assert_eq!(trashed(&world).len(), 1);
    make_due(&world, &id);
    assert_eq!(server.purge_due_undo_windows().await, Ok(1), "purged once");
    assert!(trashed(&world).is_empty(), "the trashed copy is gone");
    assert_eq!(server.purge_due_undo_windows().await, Ok(0), "never twice");
    let expired = undo(&world, &era, "alice", &id).await;
    assert_refused(
        &expired,
        rmcp_guard::Code::UndoExpired,
        Outcome::Refused(rmcp_guard::Code::UndoExpired),
    );
    assert_eq!(world.file("old.log"), None, "nothing restored");
}

async fn a_restart_between_the_delete_and_the_undo_keeps_the_window(era: ProtocolVersion) {
    let world = World::new();
    let path = world.base.join("before-restart.db");
    let human = ScriptedHuman::new(era.clone());
    human.will(accept());
    let first = SqliteStore::open(&path).expect("store");
    let client = connect(server_on(&world, first, "alice"), human).await;
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    let id = operation_id(&result);
    client
        .cancel()
        .await
        .expect("the first server's session closes");
    // A new server, with a new guard key and its own connection to the store file, on
    // the same sandbox: what it knows of the window is what the store kept. (The first
    // server lets go of the file once its session is closed; opening waits for that.)
    let mut tries = 0;
    let reopened = loop {
        // Opened off the runtime, which the first server still needs to let go of the file.
        let file = path.clone();
        match tokio::task::spawn_blocking(move || SqliteStore::open(&file))
            .await
            .expect("the open finishes")
        {
            Ok(store) => break store,
            Err(error) if tries == 100 => panic!("the store does not open again: {error}"),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    };
    let client = connect(
        server_on(&world, reopened, "alice"),
        ScriptedHuman::new(era),
    )
    .await;
    let undone = call(&client, "undo", json!({"operation_id": id})).await;
    let _ = client.cancel().await;
    assert_natural(&undone, Outcome::Undone);
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
}

async fn the_trash_is_out_of_reach_of_the_other_tools(era: ProtocolVersion) {
    let world = World::new();
    let (_, _) = delete(&world, &era).await;
    let name = trashed(&world).pop().expect("a trashed file");
    let human = ScriptedHuman::new(era.clone());
    let client = connect(server_for(&world, "alice"), human.clone()).await;
    for path in [
        format!(".guard-trash/{name}"),
        format!("./.guard-trash/{name}"),
        format!(".guard-trash//{name}"),
        format!("{}/.guard-trash/{name}", world.root.display()),
        format!("{}//./.guard-trash/{name}", world.root.display()),
    ] {
        let result = call(&client, "delete_file", json!({"path": path})).await;
        assert!(is_error(&result), "{path}: {}", text(&result));
        assert!(
            text(&result).contains("is the sandbox's trash"),
            "{}",
            text(&result)
        );
    }
    for pattern in [".guard-tras?/*", "*/*", ".*/*", "?guard-trash/*"] {
        let result = call(&client, "delete_files", json!({"pattern": pattern})).await;
        assert!(
            !text(&result).contains(&name),
            "{pattern}: {}",
            text(&result)
        );
    }
    let _ = client.cancel().await;
    assert!(
        human.shown().is_empty(),
        "nobody was asked about a trashed file"
    );
    assert_eq!(trashed(&world), vec![name], "the trashed file is untouched");
}

/// Drops `orders` as `alice`, typing its name; the result and what the human saw.
async fn drop_orders(world: &World, era: &ProtocolVersion) -> (CallToolResult, ScriptedHuman) {
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Accept(
        json!({"typed_name": "orders", "approver": "ada"}),
    ));
    let client = connect(server_for(world, "alice"), human.clone()).await;
    let result = call(&client, "drop_table", json!({"table": "orders"})).await;
    let _ = client.cancel().await;
    (result, human)
}

/// The names of the tables in `drop_table`'s trash.
fn trashed_tables(world: &World) -> Vec<String> {
    let conn = rusqlite::Connection::open(&world.db).expect("database");
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("query");
    stmt.query_map([], |r| r.get::<_, String>(0))
        .expect("rows")
        .map(|name| name.expect("name"))
        .filter(|name| rmcp_guard::db::trash::is_trashed(name))
        .collect()
}

async fn a_dropped_table_comes_back_with_its_rows(era: ProtocolVersion) {
    let world = World::new();
    let rows = world.rows("orders").expect("seeded orders");
    let (result, human) = drop_orders(&world, &era).await;
    assert_natural(&result, Outcome::Executed);
    let message = &human.shown()[0].message;
    assert!(
        message.contains(" UTC with undo; after that it is final.\n\nTo confirm, type orders"),
        "{message}"
    );
    assert!(
        text(&result).starts_with(&format!("Dropped table orders ({rows} rows).")),
        "{}",
        text(&result)
    );
    assert_eq!(world.rows("orders"), None, "the name is free");
    assert!(!world.tables().contains(&"orders".to_owned()));
    assert_eq!(trashed_tables(&world).len(), 1, "it waits in the trash");
    let undone = undo(&world, &era, "alice", &operation_id(&result)).await;
    assert_natural(&undone, Outcome::Undone);
    assert_eq!(
        undone.structured_content.expect("structured")["result"],
        json!({"restored": "orders", "rows": rows})
    );
    assert_eq!(world.rows("orders"), Some(rows), "every row is back");
    assert!(trashed_tables(&world).is_empty());
}

async fn a_new_table_under_the_name_is_never_replaced(era: ProtocolVersion) {
    let world = World::new();
    let rows = world.rows("orders").expect("seeded orders");
    let (result, _) = drop_orders(&world, &era).await;
    let id = operation_id(&result);
    let conn = rusqlite::Connection::open(&world.db).expect("database");
    conn.execute_batch("CREATE TABLE orders (note TEXT); INSERT INTO orders VALUES ('new');")
        .expect("a new orders table");
    let refused = undo(&world, &era, "alice", &id).await;
    assert_refused(
        &refused,
        rmcp_guard::Code::StateChanged,
        Outcome::UndoRefused,
    );
    assert_eq!(world.rows("orders"), Some(1), "the new table is untouched");
    assert_eq!(
        trashed_tables(&world).len(),
        1,
        "the dropped one still waits"
    );
    // Once the name is free again, the window, still open, restores it.
    conn.execute_batch("DROP TABLE orders")
        .expect("free the name");
    let undone = undo(&world, &era, "alice", &id).await;
    assert_natural(&undone, Outcome::Undone);
    assert_eq!(world.rows("orders"), Some(rows));
}

async fn after_the_window_the_dropped_table_is_purged_once(era: ProtocolVersion) {
    let world = World::new();
    let (result, _) = drop_orders(&world, &era).await;
    let id = operation_id(&result);
    let server = server_for(&world, "alice");
    assert_eq!(server.purge_due_undo_windows().await, Ok(0), "not due yet");
    make_due(&world, &id);
    assert_eq!(server.purge_due_undo_windows().await, Ok(1));
    assert!(trashed_tables(&world).is_empty(), "dropped for good");
    assert_eq!(server.purge_due_undo_windows().await, Ok(0));
    let expired = undo(&world, &era, "alice", &id).await;
    assert_refused(
        &expired,
        rmcp_guard::Code::UndoExpired,
        Outcome::Refused(rmcp_guard::Code::UndoExpired),
    );
    assert_eq!(world.rows("orders"), None, "nothing restored");
}

async fn a_trashed_table_is_out_of_reach_of_the_other_tools(era: ProtocolVersion) {
    let world = World::new();
    let _ = drop_orders(&world, &era).await;
    let trash = trashed_tables(&world).pop().expect("a trashed table");
    let human = ScriptedHuman::new(era.clone());
    let client = connect(server_for(&world, "alice"), human.clone()).await;
    let listed = call(&client, "list_tables", json!({})).await;
    assert!(!text(&listed).contains("guard-trash"), "{}", text(&listed));
    assert!(!text(&listed).contains("orders"), "{}", text(&listed));
    for name in [trash.clone(), "guard-trash".to_owned()] {
        let result = call(&client, "drop_table", json!({"table": name})).await;
        assert!(
            is_error(&result) || text(&result).contains("does not exist"),
            "{name}: {}",
            text(&result)
        );
    }
    let _ = client.cancel().await;
    assert!(
        human.shown().is_empty(),
        "nobody was asked about a trashed table"
    );
    assert_eq!(
        trashed_tables(&world),
        vec![trash],
        "the trashed table is untouched"
    );
}

/// The window lives in the store, not the process: safe-ops over stdio deletes a file, is
/// killed (SIGKILL, nothing flushed), and the process started again on the same store
/// restores it.
#[test]
fn a_killed_process_keeps_the_window() {
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    drop(safe_ops::db::open(&dir.path().join("ops.db")).unwrap());
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(dir.path().join("files/old.log"), OLD_LOG).unwrap();
    let env = [("GUARD_TENANT", "local"), ("GUARD_USER", "alice")];
    let form = json!({"elicitation": {"form": {}}});
    let mut first = stdio::StdioServer::start_declaring(dir.path(), &[], &env, form.clone());
    let deleted = first.call_answering(
        "delete_file",
        json!({"path": "old.log"}),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    let id = deleted["result"]["_meta"]["guard"]["operationId"]
        .as_str()
        .unwrap_or_else(|| panic!("no undo window: {deleted}"))
        .to_owned();
    assert!(!dir.path().join("files/old.log").exists());
    let killed = std::process::Command::new("kill")
        .args(["-9", &first.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while first.is_running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!first.is_running(), "the first process is gone");

    let mut second = stdio::StdioServer::start_declaring(dir.path(), &[], &env, form);
    let undone = second
        .request(
            "tools/call",
            json!({"name": "undo", "arguments": {"operation_id": id}}),
        )
        .expect("undo answers");
    assert_eq!(undone["_meta"]["guard"]["outcome"], "undone", "{undone}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("files/old.log")).unwrap(),
        OLD_LOG,
        "the same bytes are back"
    );
    drop(second.stop());
}

/// With `undo` left out of the allowlist, nobody can call it: the question and the result
/// say the effect is final, no window is stored, and the trashed copy is purged at once.
async fn an_undo_the_allowlist_hides_is_never_promised(era: ProtocolVersion) {
    let world = World::new();
    let list = world.base.join("no-undo.toml");
    std::fs::write(&list, "tools = [\"delete_file\", \"list_tables\"]\n").unwrap();
    let guard = operations_guard(world.operations_store(), "alice")
        .with_exposure(rmcp_guard::Exposure::allowlist(&list));
    let human = ScriptedHuman::new(era.clone());
    human.will(accept());
    let client = connect(world.server_with(guard), human.clone()).await;
    assert_eq!(tool_names(&client).await, ["delete_file", "list_tables"]);
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::Executed);
    let message = &human.shown()[0].message;
    assert!(message.ends_with("\n\nThis cannot be undone."), "{message}");
    assert!(!message.contains("undo this until"), "{message}");
    let said = text(&result);
    assert!(!said.contains("call undo"), "{said}");
    let meta = serde_json::to_value(&result.meta).expect("meta");
    assert!(
        meta["guard"].get("operationId").is_none(),
        "no window is named: {meta}"
    );
    assert!(
        trashed(&world).is_empty(),
        "no window is kept: the trashed copy is purged at once"
    );
}

/// The log holds the effect's `executed` before the window it opened and before the undo:
/// the effect's record is committed before its window opens.
async fn the_log_holds_the_effect_before_its_undo(era: ProtocolVersion) {
    let world = World::new();
    let (deleted, _) = delete(&world, &era).await;
    let undone = undo(&world, &era, "alice", &operation_id(&deleted)).await;
    assert_natural(&undone, Outcome::Undone);
    let log = rmcp_guard::audit::AuditLog::new(world.operations_store(), "reader");
    let records = log.records().await.expect("records");
    let order: Vec<String> = records
        .iter()
        .filter_map(|r| r.json())
        .filter_map(|e| e["outcome"].as_str().map(str::to_owned))
        .filter(|o| ["executed", "undo_opened", "undone"].contains(&o.as_str()))
        .collect();
    assert_eq!(order, ["executed", "undo_opened", "undone"]);
}
