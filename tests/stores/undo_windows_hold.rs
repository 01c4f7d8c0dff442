//! Undo windows on SQLite and PostgreSQL, with a real file moved into a trash and back: an
//! undo within the window restores the same bytes; a second undo answers with the first
//! result; anyone else's window is not found; after the deadline the undo is refused with
//! `UNDO_EXPIRED` and the purge runs once; an undo racing the purge has one winner, and the
//! loser says which; a window outlives a restart; two stores on one PostgreSQL purge each
//! window once; a target replaced after the effect is refused and nothing is overwritten;
//! and the database refuses to reopen a closed window.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use crate::support::orders::{Engine, World};
use rmcp_guard::{
    ToolError,
    audit::AuditLog,
    codes,
    ops::{OperationStore, now_ms},
    outcome::Outcome,
    person::Person,
    undo::{Opened, Undo, UndoWindows, Window},
};
use serde_json::{Value, json};

both_stores!(
    undo_within_the_window_restores_exactly,
    undo_twice_answers_with_the_first_result,
    another_identity_gets_not_found,
    after_the_window_the_undo_is_refused_and_the_purge_runs_once,
    undo_racing_the_purge_has_one_winner_that_the_loser_names,
    a_window_outlives_a_restart,
    a_replaced_target_is_refused_and_nothing_is_overwritten,
    a_closed_window_never_opens_again,
    background_purgers_purge_each_due_window_once,
);

const WITHIN: Duration = Duration::from_secs(600);
const TOOL: &str = "delete_file";

/// A directory of files and a trash beside it, the effect and its undo and purge, each
/// counted.
struct Files {
    dir: tempfile::TempDir,
    undos: AtomicU32,
    purges: Mutex<HashMap<String, u32>>,
}

impl Files {
    fn new() -> Arc<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join(".trash")).expect("trash");
        Arc::new(Self {
            dir,
            undos: AtomicU32::new(0),
            purges: Mutex::default(),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.path(name), bytes).expect("write");
    }

    fn read(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(name)).ok()
    }

    /// The effect: the file goes into the trash under a name of its own; what undoing needs
    /// is where it went.
    fn delete(&self, name: &str) -> Value {
        let trashed = format!(".trash/{}", uuid::Uuid::new_v4());
        std::fs::rename(self.path(name), self.path(&trashed)).expect("move to trash");
        json!({"name": name, "trashed": trashed})
    }

    /// The author's undo: refuses (`STATE_CHANGED`) if something took the name since, else
    /// moves the same file back.
    async fn undo(self: Arc<Self>, window: Window) -> Result<Value, ToolError> {
        self.undos.fetch_add(1, Ordering::SeqCst);
        let name = window.data["name"].as_str().expect("name");
        let trashed = window.data["trashed"].as_str().expect("trashed");
        if self.path(name).symlink_metadata().is_ok() {
            return Err(ToolError::new(
                codes::STATE_CHANGED,
                format!("{name} exists again, so nothing was restored: move it away first"),
            ));
        }
        // Long enough for a racing purge to be waiting on the window.
        tokio::time::sleep(Duration::from_millis(50)).await;
        std::fs::rename(self.path(trashed), self.path(name)).expect("restore");
        Ok(json!({"restored": name}))
    }

    /// The author's purge: the trashed file goes for good.
    async fn purge(self: Arc<Self>, window: Window) -> Result<(), String> {
        *self
            .purges
            .lock()
            .unwrap()
            .entry(window.operation_id.clone())
            .or_default() += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let trashed = window.data["trashed"].as_str().expect("trashed");
        match std::fs::remove_file(self.path(trashed)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn purges(&self) -> HashMap<String, u32> {
        self.purges.lock().unwrap().clone()
    }
}

fn windows(store: Arc<dyn OperationStore>) -> UndoWindows {
    UndoWindows::new(store.clone(), AuditLog::shared(store, "undo test"))
}

fn alice() -> Person {
    Person::new("tenant_demo", "alice").unwrap()
}

/// Deletes `name` as `owner` and opens its window at `now`.
async fn delete(
    windows: &UndoWindows,
    files: &Files,
    owner: &Person,
    name: &str,
    now: i64,
) -> Opened {
    let data = files.delete(name);
    windows
        .open(owner, TOOL, name, &data, WITHIN, now, "trace-effect")
        .await
        .expect("window opens")
}

async fn undo(
    windows: &UndoWindows,
    files: &Arc<Files>,
    owner: &Person,
    opened: &Opened,
    now: i64,
) -> Undo {
    let files = files.clone();
    windows
        .undo(owner, &opened.operation_id, now, "trace-undo", |w| {
            files.undo(w)
        })
        .await
        .expect("undo answers")
}

async fn purge(windows: &UndoWindows, files: &Arc<Files>, now: i64) -> u64 {
    let files = files.clone();
    windows
        .purge_due(now, |w| files.clone().purge(w))
        .await
        .expect("purge runs")
}

/// Runs `calls` as tasks at once; their answers in order.
async fn at_once<T: Send + 'static>(
    calls: impl IntoIterator<Item = impl std::future::Future<Output = T> + Send + 'static>,
) -> Vec<T> {
    let tasks: Vec<_> = calls.into_iter().map(tokio::spawn).collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("task"));
    }
    answers
}

async fn records(world: &World, outcome: Outcome) -> i64 {
    world
        .count(
            "SELECT COUNT(*) AS n FROM guard_audit_log WHERE outcome = $1",
            &[outcome.as_str().into()],
        )
        .await
}

async fn status(world: &World, opened: &Opened) -> String {
    world
        .query(
            "SELECT status FROM guard_undo WHERE operation_id = $1",
            &[opened.operation_id.as_str().into()],
        )
        .await[0]
        .text("status")
        .unwrap()
        .to_owned()
}

async fn undo_within_the_window_restores_exactly(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (files, windows) = (Files::new(), windows(world.store.clone()));
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    files.write("report.bin", &bytes);
    let now = now_ms();
    let opened = delete(&windows, &files, &alice(), "report.bin", now).await;
    assert_eq!(files.read("report.bin"), None, "the effect ran");
    assert_eq!(opened.expires_at, now + 600_000);
    assert_eq!(records(&world, Outcome::UndoOpened).await, 1);

    let answer = undo(&windows, &files, &alice(), &opened, now + 599_999).await;
    let Undo::Undone { window, result } = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(result, &json!({"restored": "report.bin"}));
    assert_eq!(window.target, "report.bin");
    assert_eq!(answer.outcome(), Outcome::Undone);
    assert_eq!(
        files.read("report.bin"),
        Some(bytes),
        "the same bytes are back"
    );
    assert_eq!(status(&world, &opened).await, "UNDONE");
    assert_eq!(records(&world, Outcome::Undone).await, 1);
    // An undone window is not purged: nothing of it is due.
    assert_eq!(purge(&windows, &files, now + 700_000).await, 0);
    assert!(files.purges().is_empty());
}

async fn undo_twice_answers_with_the_first_result(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (files, windows) = (Files::new(), windows(world.store.clone()));
    files.write("a.txt", b"first");
    let now = now_ms();
    let opened = delete(&windows, &files, &alice(), "a.txt", now).await;
    // Ten undos at once: one runs the author's undo, the others wait for it and answer
    // with its result.
    let answers = at_once((0..10).map(|_| {
        let (windows, files, opened) = (windows.clone(), files.clone(), opened.clone());
        async move { undo(&windows, &files, &alice(), &opened, now + 1).await }
    }))
    .await;
    let (first, again): (Vec<_>, Vec<_>) = answers
        .into_iter()
        .partition(|a| matches!(a, Undo::Undone { .. }));
    assert_eq!(first.len(), 1, "{first:?} {again:?}");
    // And later ones too.
    let later = undo(&windows, &files, &alice(), &opened, now + 2).await;
    for answer in again.into_iter().chain([later]) {
        let Undo::AlreadyUndone { result, at, .. } = &answer else {
            panic!("{answer:?}")
        };
        assert_eq!(result, &json!({"restored": "a.txt"}));
        assert_eq!(*at, now + 1);
        assert_eq!(answer.outcome(), Outcome::AlreadyUndone);
    }
    assert_eq!(files.undos.load(Ordering::SeqCst), 1);
    assert_eq!(files.read("a.txt").as_deref(), Some(&b"first"[..]));
    assert_eq!(records(&world, Outcome::AlreadyUndone).await, 10);
}

async fn another_identity_gets_not_found(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (files, windows) = (Files::new(), windows(world.store.clone()));
    files.write("a.txt", b"alice's");
    let now = now_ms();
    let opened = delete(&windows, &files, &alice(), "a.txt", now).await;
    for other in [
        Person::new("tenant_demo", "bob").unwrap(),
        Person::new("tenant_other", "alice").unwrap(),
    ] {
        let answer = undo(&windows, &files, &other, &opened, now + 1).await;
        assert_eq!(answer, Undo::NotFound, "{other:?}");
        assert_eq!(
            answer.outcome(),
            Outcome::Refused(codes::OPERATION_NOT_FOUND)
        );
    }
    // Exactly what an id that never existed gets.
    let unknown = Opened {
        operation_id: uuid::Uuid::new_v4().to_string(),
        expires_at: 0,
    };
    assert_eq!(
        undo(&windows, &files, &alice(), &unknown, now + 1).await,
        Undo::NotFound
    );
    assert_eq!(files.undos.load(Ordering::SeqCst), 0);
    assert_eq!(status(&world, &opened).await, "OPEN");
    assert_eq!(
        records(&world, Outcome::Refused(codes::OPERATION_NOT_FOUND)).await,
        3
    );
    // The owner, under another spelling of the same name, still can.
    let spelled = Person::new("tenant_demo", "ALICE").unwrap();
    let answer = undo(&windows, &files, &spelled, &opened, now + 2).await;
    assert!(matches!(answer, Undo::Undone { .. }), "{answer:?}");
}

async fn after_the_window_the_undo_is_refused_and_the_purge_runs_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (files, windows) = (Files::new(), windows(world.store.clone()));
    files.write("a.txt", b"gone for good");
    let now = now_ms();
    let opened = delete(&windows, &files, &alice(), "a.txt", now).await;
    let trashed = files.dir.path().join(".trash");
    assert_eq!(std::fs::read_dir(&trashed).unwrap().count(), 1);

    // Not due a moment before the deadline; due at it.
    assert_eq!(purge(&windows, &files, opened.expires_at - 1).await, 0);
    let late = undo(&windows, &files, &alice(), &opened, opened.expires_at).await;
    assert!(matches!(late, Undo::Expired { .. }), "{late:?}");
    assert_eq!(late.outcome(), Outcome::Refused(codes::UNDO_EXPIRED));

    assert_eq!(purge(&windows, &files, opened.expires_at).await, 1);
    assert_eq!(purge(&windows, &files, opened.expires_at + 1).await, 0);
    assert_eq!(
        files.purges(),
        HashMap::from([(opened.operation_id.clone(), 1)])
    );
    assert_eq!(std::fs::read_dir(&trashed).unwrap().count(), 0);
    assert_eq!(status(&world, &opened).await, "PURGED");

    let after = undo(&windows, &files, &alice(), &opened, opened.expires_at + 2).await;
    let Undo::Purged { at, .. } = after else {
        panic!("{after:?}")
    };
    assert_eq!(at, opened.expires_at);
    assert_eq!(files.undos.load(Ordering::SeqCst), 0);
    assert_eq!(files.read("a.txt"), None);
    assert_eq!(records(&world, Outcome::UndoPurged).await, 1);
    assert_eq!(
        records(&world, Outcome::Refused(codes::UNDO_EXPIRED)).await,
        2
    );
}

async fn undo_racing_the_purge_has_one_winner_that_the_loser_names(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (files, windows) = (Files::new(), windows(world.store.clone()));
    let now = now_ms();
    let mut opened = Vec::new();
    for i in 0..8 {
        let name = format!("f{i}");
        files.write(&name, name.as_bytes());
        opened.push(delete(&windows, &files, &alice(), &name, now).await);
    }
    // The undo's clock says a moment before the deadline, the purger's says the deadline:
    // both may act, and each window must end one way only.
    let deadline = opened[0].expires_at;
    let undos = at_once(opened.iter().map(|o| {
        let (windows, files, o) = (windows.clone(), files.clone(), o.clone());
        async move { undo(&windows, &files, &alice(), &o, deadline - 1).await }
    }));
    let (answers, purged) = tokio::join!(undos, purge(&windows, &files, deadline));
    let purges = files.purges();
    let mut undone = 0;
    for (answer, o) in answers.iter().zip(&opened) {
        match answer {
            Undo::Undone { .. } => {
                undone += 1;
                assert!(
                    !purges.contains_key(&o.operation_id),
                    "{o:?} undone and purged"
                );
                assert_eq!(status(&world, o).await, "UNDONE");
            }
            Undo::Purged { .. } => {
                assert_eq!(purges.get(&o.operation_id), Some(&1));
                assert_eq!(status(&world, o).await, "PURGED");
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(undone + purged, 8);
    assert_eq!(files.undos.load(Ordering::SeqCst) as u64, undone);
    assert!(purges.values().all(|n| *n == 1), "{purges:?}");
    // What neither took is purged by the next pass, once.
    assert_eq!(purge(&windows, &files, deadline).await, 0);
}

async fn a_window_outlives_a_restart(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    files.write("a.txt", b"kept across a restart");
    let now = now_ms();
    let opened = {
        let windows = windows(world.store.clone());
        delete(&windows, &files, &alice(), "a.txt", now).await
    };
    // Another store on the same database, as a restarted server opens it.
    let reopened: Arc<dyn OperationStore> = match (engine, world.sqlite_path()) {
        (Engine::Sqlite, Some(path)) => {
            Arc::new(rmcp_guard::ops::SqliteStore::open(path).expect("reopen"))
        }
        _ => Arc::new(second_pg_store(&world)),
    };
    let windows = windows(reopened);
    let answer = undo(&windows, &files, &alice(), &opened, now + 1).await;
    assert!(matches!(answer, Undo::Undone { .. }), "{answer:?}");
    assert_eq!(
        files.read("a.txt").as_deref(),
        Some(&b"kept across a restart"[..])
    );
}

async fn a_replaced_target_is_refused_and_nothing_is_overwritten(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (files, windows) = (Files::new(), windows(world.store.clone()));
    files.write("a.txt", b"the old file");
    let now = now_ms();
    let opened = delete(&windows, &files, &alice(), "a.txt", now).await;
    files.write("a.txt", b"a new file under the same name");
    let answer = undo(&windows, &files, &alice(), &opened, now + 1).await;
    let Undo::Refused { error, .. } = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(error.code(), codes::STATE_CHANGED);
    assert_eq!(answer.outcome(), Outcome::UndoRefused);
    assert_eq!(
        files.read("a.txt").as_deref(),
        Some(&b"a new file under the same name"[..])
    );
    assert_eq!(
        status(&world, &opened).await,
        "OPEN",
        "the window stays open"
    );
    assert_eq!(records(&world, Outcome::UndoRefused).await, 1);
    // Once the name is free again, the undo restores the old file.
    std::fs::rename(files.path("a.txt"), files.path("new.txt")).unwrap();
    let answer = undo(&windows, &files, &alice(), &opened, now + 2).await;
    assert!(matches!(answer, Undo::Undone { .. }), "{answer:?}");
    assert_eq!(files.read("a.txt").as_deref(), Some(&b"the old file"[..]));
}

async fn a_closed_window_never_opens_again(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (files, windows) = (Files::new(), windows(world.store.clone()));
    files.write("a.txt", b"x");
    let now = now_ms();
    let opened = delete(&windows, &files, &alice(), "a.txt", now).await;
    let id = opened.operation_id.as_str();
    // Neither the server's role nor the owner of the tables moves a deadline, hands a
    // window to someone else, rewrites what it undoes or deletes it.
    for sql in [
        "UPDATE guard_undo SET expires_at = expires_at + 1 WHERE operation_id = $1",
        "UPDATE guard_undo SET user_id = 'bob' WHERE operation_id = $1",
        "UPDATE guard_undo SET data = '{}' WHERE operation_id = $1",
        "DELETE FROM guard_undo WHERE operation_id = $1",
    ] {
        for store in [&world.store, &world.owner] {
            assert!(statement(store, sql, id).await.is_err(), "{sql}");
        }
    }
    assert!(matches!(
        undo(&windows, &files, &alice(), &opened, now + 1).await,
        Undo::Undone { .. }
    ));
    for sql in [
        "UPDATE guard_undo SET status = 'OPEN', closed_at = NULL, result = NULL WHERE operation_id = $1",
        "UPDATE guard_undo SET status = 'PURGED', result = NULL WHERE operation_id = $1",
        "UPDATE guard_undo SET result = '{}' WHERE operation_id = $1",
    ] {
        for store in [&world.store, &world.owner] {
            assert!(statement(store, sql, id).await.is_err(), "{sql}");
        }
    }
    assert_eq!(status(&world, &opened).await, "UNDONE");
    // A window cannot be written closed, either.
    let insert = "INSERT INTO guard_undo (operation_id, tenant, user_id, tool, target, data,
                      data_sha256, status, created_at, expires_at, closed_at, result, trace_id)
                  VALUES ($1, 't', 'u', 'x', 'y', '{}', 'h', 'UNDONE', 1, 2, 1, '{}', 'tr')";
    for store in [&world.store, &world.owner] {
        assert!(statement(store, insert, "forged").await.is_err());
    }
}

/// Runs `sql` with `id` on `store`; the database's answer.
pub(crate) async fn statement(
    store: &Arc<dyn OperationStore>,
    sql: &str,
    id: &str,
) -> Result<u64, String> {
    let mut tx = store.begin().await.expect("tx");
    let done = tx.execute(sql, &[id.into()]).await;
    match done {
        Ok(n) => {
            tx.commit().await.map_err(|e| e.to_string())?;
            Ok(n)
        }
        Err(e) => {
            tx.rollback().await.ok();
            Err(e.to_string())
        }
    }
}

/// A second pool of the server's role on the world's PostgreSQL schema: another process's
/// store.
pub(crate) fn second_pg_store(world: &World) -> rmcp_guard::ops::PgStore {
    let url = guard_tests::pg_url("a second store").expect("the world runs on PostgreSQL");
    let schema = world.schema.as_deref().expect("schema");
    order_cancel::stores::connect_postgres(&url, schema, 4).expect("second pool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_on_one_postgres_purge_each_window_once() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let files = Files::new();
    let now = now_ms();
    let first = windows(world.store.clone());
    let mut opened = Vec::new();
    for i in 0..20 {
        let name = format!("f{i}");
        files.write(&name, b"x");
        opened.push(delete(&first, &files, &alice(), &name, now).await);
    }
    let second = windows(Arc::new(second_pg_store(&world)));
    let due = opened[0].expires_at;
    let (a, b) = tokio::join!(purge(&first, &files, due), purge(&second, &files, due));
    assert_eq!(a + b, 20, "each window purged by one of them");
    let purges = files.purges();
    assert_eq!(purges.len(), 20);
    assert!(purges.values().all(|n| *n == 1), "{purges:?}");
    assert_eq!(records(&world, Outcome::UndoPurged).await, 20);
    assert_eq!(
        std::fs::read_dir(files.dir.path().join(".trash"))
            .unwrap()
            .count(),
        0
    );
}

/// Two servers on one store each run the background purge: every due window is purged
/// once, a window still open is left alone, and the task ends with its handle.
async fn background_purgers_purge_each_due_window_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let first = windows(world.store.clone());
    let second: Arc<dyn OperationStore> = match (engine, world.sqlite_path()) {
        (Engine::Sqlite, Some(path)) => {
            Arc::new(rmcp_guard::ops::SqliteStore::open(path).expect("second opener"))
        }
        _ => Arc::new(second_pg_store(&world)),
    };
    let second = windows(second);
    let mut due = Vec::new();
    for i in 0..6 {
        let name = format!("f{i}");
        files.write(&name, b"x");
        let data = files.delete(&name);
        let opened = first
            .open(
                &alice(),
                TOOL,
                &name,
                &data,
                Duration::from_millis(300),
                now_ms(),
                "t",
            )
            .await
            .expect("window opens");
        due.push(opened);
    }
    files.write("kept", b"x");
    let kept = delete(&first, &files, &alice(), "kept", now_ms()).await;
    let purgers = [&first, &second].map(|windows| {
        let files = files.clone();
        windows.purge_in_background(Duration::from_millis(50), move |w| files.clone().purge(w))
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while files.purges().len() < due.len() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A few more passes of both, to catch a second purge of any window.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(purgers);
    let purges = files.purges();
    for opened in &due {
        assert_eq!(purges.get(&opened.operation_id), Some(&1), "{purges:?}");
        assert_eq!(status(&world, opened).await, "PURGED");
    }
    assert_eq!(purges.len(), due.len(), "{purges:?}");
    assert_eq!(status(&world, &kept).await, "OPEN");
    // Dropped, the purgers stop: a window that falls due now stays open.
    let late = first
        .open(
            &alice(),
            TOOL,
            "late",
            &json!({"trashed": ".trash/none"}),
            Duration::from_millis(1),
            now_ms(),
            "t",
        )
        .await
        .expect("window opens");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status(&world, &late).await, "OPEN");
}
