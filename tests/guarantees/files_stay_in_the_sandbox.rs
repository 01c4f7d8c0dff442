//! The file sandbox under attack: a local process swapping a directory inside the root for a
//! symlink to an outside directory (`renameat2(RENAME_EXCHANGE)` in a loop) while deletes
//! run, a file swapped or rewritten (same size, same mtime) between the question and the
//! effect, links and odd files at every component, and no server path in anything the
//! model sees, on both protocol eras.

use std::{
    os::fd::OwnedFd,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use crate::support::*;
use rmcp::model::{CallToolResult, ProtocolVersion};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::{
    Guard,
    sandbox::{ErrorKind, Lookup, Sandbox},
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use rustix::fs::{self, AtFlags, Mode, OFlags, RenameFlags};
use safe_ops::SafeOps;
use serde_json::{Value, json};

const INSIDE_VICTIM: &str = "inside the root\n";
const OUTSIDE_VICTIM: &str = "outside the root\n";

/// How long each race runs once both outcomes (a delete, a refusal) have been seen, and the
/// hard bounds that end it regardless.
const RACE_TIME: Duration = Duration::from_secs(2);
const RACE_LIMIT: Duration = Duration::from_secs(20);
const MAX_CALLS: u64 = 100_000;
const MAX_SWAPS: u64 = 50_000_000;

/// The attacker: exchanges `root/dir` (a real directory) with `root/link` (a symlink to the
/// outside directory) with `renameat2(RENAME_EXCHANGE)`, as fast as it can, until told to stop.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(root: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (a, b) = (root.join("dir"), root.join("link"));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !flag.load(Ordering::Relaxed) && swaps < MAX_SWAPS {
                fs::renameat_with(fs::CWD, &a, fs::CWD, &b, RenameFlags::EXCHANGE)
                    .expect("renameat2(RENAME_EXCHANGE)");
                swaps += 1;
            }
            swaps
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the swapper; returns how many exchanges it made.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .map(|t| t.join().expect("swapper thread"))
            .unwrap_or(0)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `base/root/dir/victim` inside, `base/outside/victim` outside, `base/root/link` pointing
/// at `base/outside`; and a handle on the real inner directory, wherever its name is.
struct Arena {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside_victim: PathBuf,
    inner: OwnedFd,
}

impl Arena {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = dir.path().canonicalize().expect("canonical temp dir");
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("dir")).expect("root/dir");
        std::fs::create_dir_all(&outside).expect("outside");
        std::fs::write(outside.join("victim"), OUTSIDE_VICTIM).expect("outside victim");
        std::os::unix::fs::symlink(&outside, root.join("link")).expect("root/link");
        let inner = fs::open(
            root.join("dir").as_path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("inner dir handle");
        let arena = Self {
            _dir: dir,
            root,
            outside_victim: outside.join("victim"),
            inner,
        };
        arena.refill();
        arena
    }

    /// Puts the inside victim back, through the inner directory's handle (its name moves
    /// with the swaps); returns its inode.
    fn refill(&self) -> u64 {
        let fd = fs::openat(
            &self.inner,
            "victim",
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .expect("create the inside victim");
        rustix::io::write(&fd, INSIDE_VICTIM.as_bytes()).expect("write the inside victim");
        fs::fstat(&fd).expect("fstat the inside victim").st_ino
    }

    fn inside_exists(&self) -> bool {
        fs::statat(&self.inner, "victim", AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    #[track_caller]
    fn assert_outside_intact(&self, after: &str) {
        assert_eq!(
            std::fs::read_to_string(&self.outside_victim)
                .ok()
                .as_deref(),
            Some(OUTSIDE_VICTIM),
            "the file outside the root was deleted or changed {after}"
        );
    }
}

/// What a loop of deletes under the swapper did.
#[derive(Debug, Default)]
struct Tally {
    calls: u64,
    deleted: u64,
    refused: u64,
    /// Refusals that name the symlink: the swapper's state was really hit.
    refused_as_link: u64,
}

impl Tally {
    fn keep_going(&self, started: Instant) -> bool {
        let elapsed = started.elapsed();
        let seen_both = self.deleted > 0 && self.refused_as_link > 0;
        self.calls < MAX_CALLS && elapsed < RACE_LIMIT && (elapsed < RACE_TIME || !seen_both)
    }

    #[track_caller]
    fn assert_both_outcomes(&self, swaps: u64) {
        eprintln!("{self:?}, {swaps} swaps");
        assert!(swaps > 0, "the swapper ran");
        assert!(
            self.deleted > 0 && self.refused_as_link > 0,
            "the race exercised both states (a real directory and the symlink): {self:?}, {swaps} swaps"
        );
        assert_eq!(self.calls, self.deleted + self.refused, "{self:?}");
    }
}

// ── the race, against the sandbox itself ────────────────────────────────────────────────

/// The control: walking the path string again, as `std::fs::remove_file` does, reaches the
/// outside file under the same swapper. This is what the other races would catch.
#[test]
fn a_path_string_walked_again_escapes_under_the_swapper() {
    let arena = Arena::new();
    let target = arena.root.join("dir/victim");
    let swapper = Swapper::start(&arena.root);
    let started = Instant::now();
    let mut calls = 0u64;
    let mut escaped = false;
    while !escaped && calls < MAX_CALLS && started.elapsed() < RACE_LIMIT {
        arena.refill();
        let _ = std::fs::remove_file(&target);
        escaped = !arena.outside_victim.exists();
        calls += 1;
    }
    let swaps = swapper.stop();
    eprintln!("a path string escaped after {calls} calls, {swaps} swaps");
    assert!(
        escaped,
        "a plain path delete never reached outside in {calls} calls and {swaps} swaps"
    );
}

#[test]
fn the_sandbox_never_deletes_outside_under_the_swapper() {
    let arena = Arena::new();
    let sandbox = Sandbox::open(&arena.root).expect("sandbox opens");
    let swapper = Swapper::start(&arena.root);
    let started = Instant::now();
    let mut tally = Tally::default();
    while tally.keep_going(started) {
        let inode = arena.refill();
        tally.calls += 1;
        let outcome = match sandbox.resolve("dir/victim") {
            Ok(Lookup::File(entry)) => sandbox.remove(&entry.pin()),
            Ok(Lookup::Missing(path)) => panic!("`{path}` always exists in one of its forms"),
            Err(error) => Err(error),
        };
        match outcome {
            Ok(removed) => {
                tally.deleted += 1;
                assert_eq!(removed.identity().inode(), inode, "the inside file went");
                assert!(!arena.inside_exists(), "the inside file went");
            }
            Err(error) => {
                tally.refused += 1;
                assert_ne!(error.kind(), ErrorKind::Failed, "{error}");
                if error.message().contains("symbolic link") {
                    tally.refused_as_link += 1;
                }
            }
        }
        arena.assert_outside_intact(&format!("after call {}: {tally:?}", tally.calls));
    }
    let swaps = swapper.stop();
    arena.assert_outside_intact("at the end");
    tally.assert_both_outcomes(swaps);
}

// ── the race, through the real delete_file tool ─────────────────────────────────────────

both_eras!(
    delete_file_never_deletes_outside_under_the_swapper,
    an_inode_swap_keeping_size_and_mtime_is_refused,
    a_rewrite_keeping_size_and_mtime_is_refused,
    links_and_odd_files_are_refused_without_effect,
    hard_links_are_named_in_the_question,
    an_absolute_path_inside_is_asked_about_by_its_path_inside,
    no_server_path_reaches_the_model,
);

fn accept_delete() -> Answer {
    Answer::Accept(json!({"confirm": true}))
}

async fn delete_file_never_deletes_outside_under_the_swapper(era: ProtocolVersion) {
    let arena = Arena::new();
    let db = arena.root.parent().expect("base").join("safe-ops.db");
    let server = SafeOps::open(&arena.root, &db, Guard::ephemeral().expect("guard key"))
        .expect("safe-ops opens");
    let human = ScriptedHuman::new(era);
    let client = connect(server, human.clone()).await;
    let swapper = Swapper::start(&arena.root);
    let started = Instant::now();
    let mut tally = Tally::default();
    while tally.keep_going(started) {
        arena.refill();
        human.will(accept_delete());
        tally.calls += 1;
        let result = call(&client, "delete_file", json!({"path": "dir/victim"})).await;
        if is_error(&result) {
            tally.refused += 1;
            let code = code(&result);
            assert!(
                matches!(code.as_deref(), Some("INVALID_INPUT" | "STATE_CHANGED")),
                "a refusal says why: {}",
                text(&result)
            );
            if text(&result).contains("symbolic link") {
                tally.refused_as_link += 1;
            }
        } else {
            assert_natural(&result, Outcome::Executed);
            assert_eq!(text(&result), "Deleted dir/victim.");
            assert!(!arena.inside_exists(), "the inside file went");
            tally.deleted += 1;
        }
        arena.assert_outside_intact(&format!("after call {}: {tally:?}", tally.calls));
    }
    let swaps = swapper.stop();
    let _ = client.cancel().await;
    arena.assert_outside_intact("at the end");
    tally.assert_both_outcomes(swaps);
}

// ── swaps and rewrites between the question and the effect ──────────────────────────────

/// Asks to delete `old.log` and runs `while_asked` while the human looks at the question.
async fn delete_while(
    world: &World,
    era: ProtocolVersion,
    while_asked: impl Fn() + Send + Sync + 'static,
) -> (CallToolResult, ScriptedHuman) {
    let human = ScriptedHuman::new(era);
    human.will(accept_delete());
    let observer = Observer::new(human.clone()).while_asked(while_asked);
    let client = connect(world.server(), observer).await;
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    let _ = client.cancel().await;
    (result, human)
}

fn set_mtime(path: &Path, time: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(time))
        .expect("set mtime");
}

fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

const LOOKALIKE: &str = "ROTATED LOG LINES\n";

async fn an_inode_swap_keeping_size_and_mtime_is_refused(era: ProtocolVersion) {
    assert_eq!(LOOKALIKE.len(), OLD_LOG.len());
    let world = World::new();
    let path = world.path("old.log");
    let twin = world.path("twin.tmp");
    let (result, human) = delete_while(&world, era, move || {
        std::fs::write(&twin, LOOKALIKE).expect("twin");
        set_mtime(&twin, mtime(&path));
        std::fs::rename(&twin, &path).expect("swap the twin in");
    })
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::StateChanged,
        Outcome::StateChanged,
    );
    assert!(text(&result).contains("old.log"), "{}", text(&result));
    assert_eq!(
        world.file("old.log").as_deref(),
        Some(LOOKALIKE),
        "the swapped-in file is not deleted"
    );
    assert_eq!(human.shown().len(), 1);
}

async fn a_rewrite_keeping_size_and_mtime_is_refused(era: ProtocolVersion) {
    let world = World::new();
    let path = world.path("old.log");
    let (result, _human) = delete_while(&world, era, move || {
        let before = mtime(&path);
        std::fs::write(&path, LOOKALIKE).expect("rewrite in place");
        set_mtime(&path, before);
    })
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::StateChanged,
        Outcome::StateChanged,
    );
    assert_eq!(world.file("old.log").as_deref(), Some(LOOKALIKE));
}

// ── links, odd files and odd spellings ──────────────────────────────────────────────────

/// One call of `delete_file` on `path` with an accepting human, bounded in time.
async fn delete(
    world: &World,
    era: &ProtocolVersion,
    path: &str,
) -> (CallToolResult, ScriptedHuman) {
    let human = ScriptedHuman::new(era.clone());
    human.will(accept_delete());
    let client = connect(world.server(), human.clone()).await;
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        call(&client, "delete_file", json!({ "path": path })),
    )
    .await
    .unwrap_or_else(|_| panic!("delete_file {path:?} hung"));
    let _ = client.cancel().await;
    (result, human)
}

async fn links_and_odd_files_are_refused_without_effect(era: ProtocolVersion) {
    let world = World::new();
    let outside_dir = world.base.join("elsewhere");
    std::fs::create_dir(&outside_dir).expect("outside dir");
    std::fs::write(outside_dir.join("old.log"), OUTSIDE_VICTIM).expect("outside file");
    std::fs::create_dir(world.path("sub")).expect("sub");
    std::fs::write(world.path("sub/kept.txt"), INSIDE_VICTIM).expect("sub/kept.txt");
    std::os::unix::fs::symlink(&world.outside, world.path("leaf-out")).expect("leaf link out");
    std::os::unix::fs::symlink("old.log", world.path("leaf-in")).expect("leaf link in");
    std::os::unix::fs::symlink(&outside_dir, world.path("mid-out")).expect("middle link out");
    std::os::unix::fs::symlink("sub", world.path("mid-in")).expect("middle link in");
    fs::mkfifoat(
        fs::CWD,
        world.path("pipe").as_path(),
        Mode::from_raw_mode(0o600),
    )
    .expect("fifo");
    let absolute_outside = world.outside.display().to_string();
    let absolute_beside = format!("{}2/old.log", world.root.display());
    let absolute_out_of_it = format!("{}/../outside.txt", world.root.display());
    for path in [
        "leaf-out",
        "leaf-in",
        "mid-out/old.log",
        "mid-in/kept.txt",
        "pipe",
        "pipe/x",
        "sub",
        "old.log/x",
        "..",
        "../outside.txt",
        "sub/../../outside.txt",
        "sub/..",
        absolute_outside.as_str(),
        absolute_beside.as_str(),
        absolute_out_of_it.as_str(),
        "/etc/passwd",
        "old.log\0",
        "old\u{200B}.log",
        "\u{202E}gol.dlo",
        ".",
        "",
    ] {
        let (result, human) = delete(&world, &era, path).await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidInput,
            Outcome::PreviewFailed,
        );
        assert!(human.shown().is_empty(), "{path:?}: nobody is asked");
        assert_eq!(read(&world.outside).as_deref(), Some(OUTSIDE), "{path:?}");
        assert_eq!(
            read(&outside_dir.join("old.log")).as_deref(),
            Some(OUTSIDE_VICTIM),
            "{path:?}"
        );
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG), "{path:?}");
        assert_eq!(
            world.file("sub/kept.txt").as_deref(),
            Some(INSIDE_VICTIM),
            "{path:?}"
        );
        for kept in ["leaf-out", "leaf-in", "mid-out", "mid-in", "pipe"] {
            assert!(
                std::fs::symlink_metadata(world.path(kept)).is_ok(),
                "{path:?}: {kept} is left alone"
            );
        }
    }
    let (result, _) = delete(&world, &era, "mid-out/old.log").await;
    assert!(
        text(&result).contains("`mid-out` (on the way to `mid-out/old.log`) is a symbolic link"),
        "the refusal names the link: {}",
        text(&result)
    );
    let (result, _) = delete(&world, &era, "pipe").await;
    assert!(text(&result).contains("named pipe"), "{}", text(&result));
}

async fn hard_links_are_named_in_the_question(era: ProtocolVersion) {
    let world = World::new();
    std::fs::hard_link(world.path("old.log"), world.path("same.log")).expect("hard link");
    let (result, human) = delete(&world, &era, "old.log").await;
    assert_natural(&result, Outcome::Executed);
    let shown = human.shown();
    assert_eq!(
        shown[0].message,
        format!(
            "Delete file old.log ({} bytes). This file has 1 other name; deleting this name \
             keeps the data.\n\nThis cannot be undone.",
            OLD_LOG.len()
        )
    );
    assert_eq!(world.file("old.log"), None);
    assert_eq!(
        world.file("same.log").as_deref(),
        Some(OLD_LOG),
        "the data stays"
    );

    std::fs::hard_link(world.path("report.csv"), world.path("a.csv")).expect("hard link");
    std::fs::hard_link(world.path("report.csv"), world.base.join("b.csv")).expect("hard link");
    let (_, human) = delete(&world, &era, "report.csv").await;
    assert!(
        human.shown()[0]
            .message
            .contains("This file has 2 other names; deleting this name keeps the data."),
        "{}",
        human.shown()[0].message
    );
    let (_, human) = delete(&world, &era, "same.log").await;
    assert!(
        human.shown()[0].message.ends_with("This cannot be undone."),
        "{}",
        human.shown()[0].message
    );
}

/// A model that only knows a file's absolute path can still name it: the question and the
/// answer show the path inside the root, and the same file is deleted.
async fn an_absolute_path_inside_is_asked_about_by_its_path_inside(era: ProtocolVersion) {
    let world = World::new();
    std::fs::create_dir(world.path("sub")).expect("sub");
    std::fs::write(world.path("sub/kept.txt"), INSIDE_VICTIM).expect("sub/kept.txt");
    let absolute = format!("{}//./sub/kept.txt", world.root.display());
    let (result, human) = delete(&world, &era, &absolute).await;
    assert_natural(&result, Outcome::Executed);
    let shown = human.shown();
    assert_eq!(shown.len(), 1);
    assert!(
        shown[0].message.starts_with(&format!(
            "Delete file sub/kept.txt ({} bytes).",
            INSIDE_VICTIM.len()
        )),
        "{}",
        shown[0].message
    );
    assert!(
        visible(&result).contains("Deleted sub/kept.txt."),
        "{}",
        visible(&result)
    );
    let root = world.root.display().to_string();
    assert!(!visible(&result).contains(&root) && !shown[0].message.contains(&root));
    assert_eq!(world.file("sub/kept.txt"), None);
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
}

// ── what the model sees ─────────────────────────────────────────────────────────────────

/// Every text a result carries: content blocks and structured content.
fn visible(result: &CallToolResult) -> String {
    let mut all = text(result);
    if let Some(structured) = &result.structured_content {
        all.push('\n');
        all.push_str(&structured.to_string());
    }
    all
}

async fn no_server_path_reaches_the_model(era: ProtocolVersion) {
    let world = World::new();
    std::fs::create_dir(world.path("sub")).expect("sub");
    std::os::unix::fs::symlink(&world.outside, world.path("leaf-out")).expect("link");
    std::os::unix::fs::symlink(&world.base, world.path("mid-out")).expect("link");
    fs::mkfifoat(
        fs::CWD,
        world.path("pipe").as_path(),
        Mode::from_raw_mode(0o600),
    )
    .expect("fifo");
    let absolute_inside = world.path("old.log").display().to_string();
    let swapped = world.path("report.csv");
    let mut seen: Vec<String> = Vec::new();
    let calls: Vec<(&str, Value, Answer)> = vec![
        ("delete_file", json!({"path": "nope.txt"}), accept_delete()),
        (
            "delete_file",
            json!({"path": "../outside.txt"}),
            accept_delete(),
        ),
        (
            "delete_file",
            json!({"path": absolute_inside}),
            Answer::Decline,
        ),
        (
            "delete_file",
            json!({"path": "/etc/passwd"}),
            accept_delete(),
        ),
        ("delete_file", json!({"path": "leaf-out"}), accept_delete()),
        (
            "delete_file",
            json!({"path": "mid-out/outside.txt"}),
            accept_delete(),
        ),
        ("delete_file", json!({"path": "pipe"}), accept_delete()),
        ("delete_file", json!({"path": "sub"}), accept_delete()),
        ("delete_file", json!({"path": "old.log\0"}), accept_delete()),
        ("delete_file", json!({"path": "old.log"}), Answer::Decline),
        ("delete_file", json!({"path": "old.log"}), Answer::Cancel),
        (
            "delete_file",
            json!({"path": "old.log"}),
            Answer::Accept(json!({"confirm": false})),
        ),
        ("delete_file", json!({"path": "./old.log"}), accept_delete()),
        ("drop_table", json!({"table": "nope"}), Answer::Decline),
        ("drop_table", json!({"table": "orders"}), Answer::Decline),
        (
            "drop_table",
            json!({"table": "orders"}),
            Answer::Accept(json!({"typed_name": "Orders", "approver": "ada"})),
        ),
        (
            "drop_table",
            json!({"table": "orders"}),
            Answer::Accept(json!({"typed_name": "orders", "approver": "ada"})),
        ),
        (
            "deploy",
            json!({"service": "billing"}),
            Answer::Accept(json!({"approval_level": "standard", "rollback_plan": "redeploy"})),
        ),
        ("list_tables", json!({}), Answer::Cancel),
    ];
    for (tool, args, answer) in calls {
        let human = ScriptedHuman::new(era.clone());
        human.will(answer);
        let client = connect(world.server(), human.clone()).await;
        let result = call(&client, tool, args.clone()).await;
        let _ = client.cancel().await;
        seen.push(format!("{tool}: {}", visible(&result)));
        seen.extend(
            human
                .shown()
                .into_iter()
                .map(|s| format!("{tool} asked: {}", s.message)),
        );
    }
    // A file changed while the human looks: the STATE_CHANGED refusal names it too.
    let human = ScriptedHuman::new(era.clone());
    human.will(accept_delete());
    let observer = Observer::new(human.clone()).while_asked(move || {
        std::fs::write(&swapped, "changed\n").expect("rewrite");
    });
    let client = connect(world.server(), observer).await;
    let result = call(&client, "delete_file", json!({"path": "report.csv"})).await;
    let _ = client.cancel().await;
    assert_refused(
        &result,
        rmcp_guard::Code::StateChanged,
        Outcome::StateChanged,
    );
    seen.push(format!("changed: {}", visible(&result)));
    seen.extend(
        human
            .shown()
            .into_iter()
            .map(|s| format!("asked: {}", s.message)),
    );

    assert!(
        seen.iter()
            .any(|s| s.contains("Delete file old.log (18 bytes)")),
        "the question names the file relative to the root: {seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|s| s.contains("drop table `orders` from the safe-ops database")),
        "{seen:#?}"
    );
    assert!(
        seen.iter().any(|s| s.contains("Deleted old.log.")),
        "{seen:#?}"
    );
    let temp = world.base.display().to_string();
    let raw_temp = std::env::temp_dir().display().to_string();
    for text in &seen {
        for location in [&temp, &raw_temp] {
            assert!(
                !text.contains(location.as_str()),
                "a server path reached the model: {text}"
            );
        }
        assert!(
            !text.contains("safe-ops.db"),
            "the database file is named: {text}"
        );
    }
}
