//! Undo windows on SQLite and PostgreSQL, with a real file moved into a trash and back, each
//! window opened by guard's pipeline after a reversible tool's effect (no code opens one
//! otherwise): an undo within the window restores the same bytes; a second undo answers
//! with the first result; anyone else's window is not found; after the deadline, by the
//! database's clock, the undo is refused with `UNDO_EXPIRED` and the purge runs once; before
//! it, no purge pass closes a window and the database refuses to mark one purged; an undo
//! racing the purge has one winner, and the loser says which; a window outlives a restart;
//! two stores on one PostgreSQL purge each window once; a target replaced after the effect
//! is refused and nothing is overwritten; an undo that can never succeed ends its window
//! `LOST`; and the database refuses to reopen a closed window.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use crate::support::{
    assert_natural, assert_refused, call, connect,
    deferred::until,
    orders::{Engine, World},
    outcome, text,
};
use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Code, Confirmed, EnvIdentity, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError,
    destructive, exposed,
    forms::Checkbox,
    ops::{OperationStore, Operations, now_ms},
    outcome::Outcome,
    undo::{Purger, Reversible, Window},
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_stores!(
    undo_within_the_window_restores_exactly,
    undo_twice_answers_with_the_first_result,
    another_identity_gets_not_found,
    after_the_window_the_undo_is_refused_and_the_purge_runs_once,
    before_its_deadline_a_window_is_never_purged,
    undo_racing_the_purge_has_one_winner_that_the_loser_names,
    a_window_outlives_a_restart,
    a_replaced_target_is_refused_and_nothing_is_overwritten,
    an_undo_that_can_never_succeed_ends_the_window,
    a_closed_window_never_opens_again,
    background_purgers_purge_each_due_window_once,
);

/// The tool whose windows stay open ten minutes, and the one whose close in two seconds.
const TOOL: &str = "delete_file";
const BRIEFLY: &str = "delete_file_briefly";
/// `BRIEFLY`'s window.
const BRIEF: Duration = Duration::from_secs(2);

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

    /// The author's undo: refuses (`STATE_CHANGED`) if something took the name since, for
    /// good (`UNDO_EXPIRED`) if the trashed file is gone, else moves the same file back.
    async fn undo(self: Arc<Self>, window: Window) -> Result<Value, ToolError> {
        self.undos.fetch_add(1, Ordering::SeqCst);
        let name = window.data["name"].as_str().expect("name");
        let trashed = window.data["trashed"].as_str().expect("trashed");
        if self.path(name).symlink_metadata().is_ok() {
            return Err(ToolError::new(
                Code::StateChanged,
                format!("{name} exists again, so nothing was restored: move it away first"),
            ));
        }
        if self.path(trashed).symlink_metadata().is_err() {
            return Err(ToolError::new(
                Code::UndoExpired,
                format!("the trashed copy of {name} is no longer in the trash."),
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

/// A server whose reversible deletes move files of `files` into its trash, for the calls of
/// one person.
#[derive(Clone)]
struct Trash {
    guard: Arc<Guard>,
    files: Arc<Files>,
}

impl Guarded for Trash {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct FileArgs {
    /// The file to delete.
    name: String,
}

#[tool_router]
impl Trash {
    /// Delete a file; it can be undone for ten minutes.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview,
        undo = Self::restore,
        undo_within = "10m",
        purge = Self::purge_trashed
    )]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<FileArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Reversible<String, Value> {
        let data = self.files.delete(&args.name);
        Reversible::new(format!("Deleted {}.", args.name), data)
    }

    /// Delete a file; it can be undone for two seconds.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview,
        undo = Self::restore,
        undo_within = "2s",
        purge = Self::purge_trashed
    )]
    #[tool]
    async fn delete_file_briefly(
        &self,
        Parameters(args): Parameters<FileArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Reversible<String, Value> {
        let data = self.files.delete(&args.name);
        Reversible::new(format!("Deleted {}.", args.name), data)
    }

    async fn preview(&self, args: &FileArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(
            &args.name,
            format!("Delete {}.", args.name),
        ))
    }

    async fn restore(&self, window: Window) -> Result<Value, ToolError> {
        self.files.clone().undo(window).await
    }

    async fn purge_trashed(&self, window: Window) -> Result<(), String> {
        self.files.clone().purge(window).await
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Trash {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl Trash {
    /// `user` of `tenant`'s server on `store`, deleting in `files`.
    fn new(store: Arc<dyn OperationStore>, files: &Arc<Files>, tenant: &str, user: &str) -> Self {
        let (tenant, user) = (tenant.to_owned(), user.to_owned());
        let identity = EnvIdentity::from_lookup(move |name| match name {
            EnvIdentity::TENANT_ENV => Some(tenant.clone()),
            EnvIdentity::USER_ENV => Some(user.clone()),
            _ => Some(String::new()),
        })
        .expect("identity");
        let guard = Guard::ephemeral()
            .expect("guard key")
            .with_exposure(Exposure::all_tools())
            .with_operations(Operations::new(store, identity));
        Self {
            guard: Arc::new(guard),
            files: files.clone(),
        }
    }

    /// One purge pass, of what the database's clock says is due: how many windows it purged.
    async fn purge_due(&self) -> u64 {
        rmcp_guard::purge_due_undo_windows(self, Self::tool_router)
            .await
            .expect("purge runs")
    }

    /// The background purge, every `every`, until the purger is dropped.
    fn purge_in_background(&self, every: Duration) -> Purger {
        rmcp_guard::purge_undo_windows(self.clone(), Self::tool_router, every)
            .expect("a purger: the server has a store and an undo")
    }
}

/// alice's server on `store`.
fn alice(store: Arc<dyn OperationStore>, files: &Arc<Files>) -> Trash {
    Trash::new(store, files, "tenant_demo", "alice")
}

/// A window as the effect's result and the store name it.
#[derive(Debug, Clone)]
struct Opened {
    operation_id: String,
    created_at: i64,
    expires_at: i64,
}

/// Deletes `name` with `TOOL` on `server`, the human accepting; its window.
async fn delete(world: &World, server: &Trash, name: &str) -> Opened {
    delete_with(world, server, TOOL, name).await
}

/// Deletes `name` with `tool` on `server`, the human accepting; its window.
async fn delete_with(world: &World, server: &Trash, tool: &str, name: &str) -> Opened {
    let human = ScriptedHuman::new(crate::support::PUSH);
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = connect(server.clone(), human).await;
    let result = call(&client, tool, json!({"name": name})).await;
    let _ = client.cancel().await;
    assert_natural(&result, Outcome::Executed);
    let meta = serde_json::to_value(&result.meta).expect("meta");
    let operation_id = meta["guard"]["operationId"]
        .as_str()
        .unwrap_or_else(|| panic!("the effect's result names no undo window: {meta}"))
        .to_owned();
    let row = &world
        .query(
            "SELECT created_at, expires_at FROM guard_undo WHERE operation_id = $1",
            &[operation_id.as_str().into()],
        )
        .await[0];
    Opened {
        operation_id,
        created_at: row.int("created_at").unwrap(),
        expires_at: row.int("expires_at").unwrap(),
    }
}

/// `undo` of `opened` on `server` (its person's).
async fn undo(server: &Trash, opened: &Opened) -> CallToolResult {
    undo_id(server, &opened.operation_id).await
}

async fn undo_id(server: &Trash, id: &str) -> CallToolResult {
    let client = connect(server.clone(), ScriptedHuman::new(crate::support::PUSH)).await;
    let result = call(&client, "undo", json!({"operation_id": id})).await;
    let _ = client.cancel().await;
    result
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
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

/// When the window closed, as stored.
async fn closed_at(world: &World, opened: &Opened) -> i64 {
    world
        .query(
            "SELECT closed_at FROM guard_undo WHERE operation_id = $1",
            &[opened.operation_id.as_str().into()],
        )
        .await[0]
        .int("closed_at")
        .unwrap()
}

/// Another store on the world's database, as a restarted or another server opens it.
fn another_store(world: &World) -> Arc<dyn OperationStore> {
    match (world.engine, world.sqlite_path()) {
        (Engine::Sqlite, Some(path)) => {
            Arc::new(rmcp_guard::ops::SqliteStore::open(path).expect("another opener"))
        }
        _ => Arc::new(second_pg_store(world)),
    }
}

async fn undo_within_the_window_restores_exactly(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    files.write("report.bin", &bytes);
    let before = now_ms();
    let opened = delete(&world, &server, "report.bin").await;
    let after = now_ms();
    assert_eq!(files.read("report.bin"), None, "the effect ran");
    // Ten minutes from the effect, on the database's clock (this machine's, here).
    assert_eq!(opened.expires_at, opened.created_at + 600_000);
    assert!(
        (before - 1_000..=after + 1_000).contains(&opened.created_at),
        "{before} <= {} <= {after}",
        opened.created_at
    );
    assert_eq!(records(&world, Outcome::UndoOpened).await, 1);

    let answer = undo(&server, &opened).await;
    assert_natural(&answer, Outcome::Undone);
    assert_eq!(
        structured(&answer)["result"],
        json!({"restored": "report.bin"})
    );
    assert_eq!(structured(&answer)["target"], "report.bin");
    assert_eq!(
        files.read("report.bin"),
        Some(bytes),
        "the same bytes are back"
    );
    assert_eq!(status(&world, &opened).await, "UNDONE");
    assert_eq!(records(&world, Outcome::Undone).await, 1);
    // An undone window is not purged.
    assert_eq!(server.purge_due().await, 0);
    assert!(files.purges().is_empty());
}

async fn undo_twice_answers_with_the_first_result(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    files.write("a.txt", b"first");
    let opened = delete(&world, &server, "a.txt").await;
    // Ten undos at once: one runs the author's undo, the others wait for it and answer
    // with its result.
    let answers = at_once((0..10).map(|_| {
        let (server, opened) = (server.clone(), opened.clone());
        async move { undo(&server, &opened).await }
    }))
    .await;
    let (first, again): (Vec<_>, Vec<_>) = answers
        .into_iter()
        .partition(|a| outcome(a) == Some(Outcome::Undone));
    assert_eq!(first.len(), 1, "{first:?} {again:?}");
    // And later ones too.
    let later = undo(&server, &opened).await;
    let undone_at = structured(&later)["undone_at"].clone();
    assert!(undone_at.is_string(), "{later:?}");
    for answer in again.into_iter().chain([later]) {
        assert_natural(&answer, Outcome::AlreadyUndone);
        assert_eq!(structured(&answer)["result"], json!({"restored": "a.txt"}));
        assert_eq!(
            structured(&answer)["undone_at"],
            undone_at,
            "one undo, one time"
        );
    }
    assert_eq!(files.undos.load(Ordering::SeqCst), 1);
    assert_eq!(files.read("a.txt").as_deref(), Some(&b"first"[..]));
    assert_eq!(records(&world, Outcome::AlreadyUndone).await, 10);
}

async fn another_identity_gets_not_found(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    files.write("a.txt", b"alice's");
    let opened = delete(&world, &server, "a.txt").await;
    for (tenant, user) in [("tenant_demo", "bob"), ("tenant_other", "alice")] {
        let other = Trash::new(world.store.clone(), &files, tenant, user);
        let answer = undo(&other, &opened).await;
        assert_refused(
            &answer,
            Code::OperationNotFound,
            Outcome::Refused(Code::OperationNotFound),
        );
        // Exactly what an id that never existed gets.
        let unknown = uuid::Uuid::new_v4().to_string();
        let never = undo_id(&other, &unknown).await;
        assert_eq!(
            text(&answer).replace(&opened.operation_id, "ID"),
            text(&never).replace(&unknown, "ID"),
            "{tenant}/{user}"
        );
    }
    assert_eq!(files.undos.load(Ordering::SeqCst), 0);
    assert_eq!(status(&world, &opened).await, "OPEN");
    assert_eq!(
        records(&world, Outcome::Refused(Code::OperationNotFound)).await,
        4
    );
    // The owner, under another spelling of the same name, still can.
    let spelled = Trash::new(world.store.clone(), &files, "tenant_demo", "ALICE");
    assert_natural(&undo(&spelled, &opened).await, Outcome::Undone);
}

async fn after_the_window_the_undo_is_refused_and_the_purge_runs_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    files.write("a.txt", b"gone for good");
    let opened = delete_with(&world, &server, BRIEFLY, "a.txt").await;
    assert_eq!(
        opened.expires_at,
        opened.created_at + BRIEF.as_millis() as i64
    );
    let trashed = files.dir.path().join(".trash");
    assert_eq!(std::fs::read_dir(&trashed).unwrap().count(), 1);

    // Not due before the deadline; once the database's clock passed it, the window is
    // closed for the undo, though no purge ran yet.
    assert_eq!(server.purge_due().await, 0);
    until(opened.expires_at).await;
    let late = undo(&server, &opened).await;
    assert_refused(
        &late,
        Code::UndoExpired,
        Outcome::Refused(Code::UndoExpired),
    );
    assert!(
        text(&late).contains("so the effect is final"),
        "{}",
        text(&late)
    );
    assert_eq!(status(&world, &opened).await, "OPEN", "not purged yet");

    assert_eq!(server.purge_due().await, 1);
    assert_eq!(server.purge_due().await, 0);
    assert_eq!(
        files.purges(),
        HashMap::from([(opened.operation_id.clone(), 1)])
    );
    assert_eq!(std::fs::read_dir(&trashed).unwrap().count(), 0);
    assert_eq!(status(&world, &opened).await, "PURGED");

    let after = undo(&server, &opened).await;
    assert_refused(
        &after,
        Code::UndoExpired,
        Outcome::Refused(Code::UndoExpired),
    );
    assert!(
        text(&after).contains("was made final at"),
        "{}",
        text(&after)
    );
    assert!(closed_at(&world, &opened).await >= opened.expires_at);
    assert_eq!(files.undos.load(Ordering::SeqCst), 0);
    assert_eq!(files.read("a.txt"), None);
    assert_eq!(records(&world, Outcome::UndoPurged).await, 1);
    assert_eq!(
        records(&world, Outcome::Refused(Code::UndoExpired)).await,
        2
    );
}

/// The purge takes no time from anyone: a window is due when the database's clock passed
/// the deadline stored with it. Before that, purge passes, one after another or in the
/// background every few milliseconds, leave it open, and neither the server's role nor the
/// tables' owner can mark it purged; the undo still restores it.
async fn before_its_deadline_a_window_is_never_purged(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    files.write("a.txt", b"still mine");
    let opened = delete(&world, &server, "a.txt").await;
    for _ in 0..3 {
        assert_eq!(server.purge_due().await, 0);
    }
    let purger = server.purge_in_background(Duration::from_millis(5));
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(purger);
    assert!(files.purges().is_empty(), "{:?}", files.purges());
    for sql in [
        "UPDATE guard_undo SET status = 'PURGED', closed_at = created_at + 1 WHERE operation_id = $1",
        "UPDATE guard_undo SET status = 'PURGED', closed_at = expires_at WHERE operation_id = $1",
    ] {
        for store in [&world.store, &world.owner] {
            let refused = statement(store, sql, &opened.operation_id).await;
            assert!(
                refused
                    .as_ref()
                    .is_err_and(|e| e.contains("purged only after")),
                "{sql}: {refused:?}"
            );
        }
    }
    assert_eq!(status(&world, &opened).await, "OPEN");
    assert_eq!(records(&world, Outcome::UndoPurged).await, 0);
    assert_natural(&undo(&server, &opened).await, Outcome::Undone);
    assert_eq!(files.read("a.txt").as_deref(), Some(&b"still mine"[..]));
}

async fn undo_racing_the_purge_has_one_winner_that_the_loser_names(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    let mut opened = Vec::new();
    for i in 0..8 {
        let name = format!("f{i}");
        files.write(&name, name.as_bytes());
        opened.push(delete_with(&world, &server, BRIEFLY, &name).await);
    }
    // Each undo is asked a moment before its window's deadline, while purge passes run
    // until every deadline passed: both may act on a window, and it must end one way only.
    let first = opened.iter().map(|o| o.expires_at).min().unwrap();
    let deadline = opened.iter().map(|o| o.expires_at).max().unwrap();
    let undos = at_once(opened.iter().map(|o| {
        let (server, o) = (server.clone(), o.clone());
        async move {
            until(o.expires_at - 30).await;
            undo(&server, &o).await
        }
    }));
    let purging = async {
        until(first - 30).await;
        let mut purged = 0;
        loop {
            let last = now_ms() > deadline + 100;
            purged += server.purge_due().await;
            if last {
                return purged;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let (answers, purged) = tokio::join!(undos, purging);
    let purges = files.purges();
    let mut undone = 0;
    for (answer, o) in answers.iter().zip(&opened) {
        match outcome(answer) {
            Some(Outcome::Undone) => {
                undone += 1;
                assert!(
                    !purges.contains_key(&o.operation_id),
                    "{o:?} undone and purged"
                );
                assert_eq!(status(&world, o).await, "UNDONE");
            }
            Some(Outcome::Refused(Code::UndoExpired)) => {
                // Purged first, or past its deadline before the purge came to it.
                assert!(
                    text(answer).contains("was made final at")
                        || text(answer).contains("so the effect is final"),
                    "{}",
                    text(answer)
                );
                assert_eq!(purges.get(&o.operation_id), Some(&1));
                assert_eq!(status(&world, o).await, "PURGED");
            }
            other => panic!("{other:?}: {}", text(answer)),
        }
    }
    assert_eq!(undone + purged, 8);
    assert_eq!(files.undos.load(Ordering::SeqCst) as u64, undone);
    assert!(purges.values().all(|n| *n == 1), "{purges:?}");
    // Nothing is left for another pass.
    assert_eq!(server.purge_due().await, 0);
}

async fn a_window_outlives_a_restart(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    files.write("a.txt", b"kept across a restart");
    let opened = {
        let server = alice(world.store.clone(), &files);
        delete(&world, &server, "a.txt").await
    };
    // Another store on the same database, as a restarted server opens it.
    let restarted = alice(another_store(&world), &files);
    assert_natural(&undo(&restarted, &opened).await, Outcome::Undone);
    assert_eq!(
        files.read("a.txt").as_deref(),
        Some(&b"kept across a restart"[..])
    );
}

async fn a_replaced_target_is_refused_and_nothing_is_overwritten(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    files.write("a.txt", b"the old file");
    let opened = delete(&world, &server, "a.txt").await;
    files.write("a.txt", b"a new file under the same name");
    let answer = undo(&server, &opened).await;
    assert_refused(&answer, Code::StateChanged, Outcome::UndoRefused);
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
    assert_natural(&undo(&server, &opened).await, Outcome::Undone);
    assert_eq!(files.read("a.txt").as_deref(), Some(&b"the old file"[..]));
}

/// An undo that can never succeed (the author's undo refuses with `UNDO_EXPIRED`: the
/// trashed copy went away) ends the window `LOST` with its reason, audited: a later undo
/// answers the same without running the author's undo again, and no purge runs for it.
async fn an_undo_that_can_never_succeed_ends_the_window(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    files.write("a.txt", b"lost from the trash");
    let opened = delete(&world, &server, "a.txt").await;
    for entry in std::fs::read_dir(files.path(".trash")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let lost = undo(&server, &opened).await;
    assert_refused(
        &lost,
        Code::UndoExpired,
        Outcome::Refused(Code::UndoExpired),
    );
    assert!(
        text(&lost).contains("is no longer in the trash"),
        "{}",
        text(&lost)
    );
    assert_eq!(status(&world, &opened).await, "LOST");
    let again = undo(&server, &opened).await;
    assert_eq!(text(&again), text(&lost), "the same reason, every time");
    assert_eq!(files.undos.load(Ordering::SeqCst), 1, "the undo ran once");
    assert_eq!(server.purge_due().await, 0);
    assert!(files.purges().is_empty(), "no purge for a lost window");
    assert_eq!(
        records(&world, Outcome::Refused(Code::UndoExpired)).await,
        2
    );
    // Neither role reopens it or rewrites its reason.
    for sql in [
        "UPDATE guard_undo SET status = 'OPEN', closed_at = NULL, result = NULL WHERE operation_id = $1",
        "UPDATE guard_undo SET result = '{}' WHERE operation_id = $1",
    ] {
        for store in [&world.store, &world.owner] {
            assert!(
                statement(store, sql, &opened.operation_id).await.is_err(),
                "{sql}"
            );
        }
    }
}

async fn a_closed_window_never_opens_again(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let files = Files::new();
    let server = alice(world.store.clone(), &files);
    files.write("a.txt", b"x");
    let opened = delete(&world, &server, "a.txt").await;
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
    assert_natural(&undo(&server, &opened).await, Outcome::Undone);
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
    let first = alice(world.store.clone(), &files);
    let mut opened = Vec::new();
    for i in 0..20 {
        let name = format!("f{i}");
        files.write(&name, b"x");
        opened.push(delete_with(&world, &first, BRIEFLY, &name).await);
    }
    let second = alice(Arc::new(second_pg_store(&world)), &files);
    until(opened.iter().map(|o| o.expires_at).max().unwrap()).await;
    let (a, b) = tokio::join!(first.purge_due(), second.purge_due());
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
    let first = alice(world.store.clone(), &files);
    let second = alice(another_store(&world), &files);
    let mut due = Vec::new();
    for i in 0..6 {
        let name = format!("f{i}");
        files.write(&name, b"x");
        due.push(delete_with(&world, &first, BRIEFLY, &name).await);
    }
    files.write("kept", b"x");
    let kept = delete(&world, &first, "kept").await;
    let every = Duration::from_millis(50);
    let purgers = [&first, &second].map(|server| server.purge_in_background(every));
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
    files.write("late", b"x");
    let late = delete_with(&world, &first, BRIEFLY, "late").await;
    until(late.expires_at + 300).await;
    assert_eq!(status(&world, &late).await, "OPEN");
}
