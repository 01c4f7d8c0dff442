//! What the binary's test files share: running `guard-audit`, and a log to run it on.

use std::{
    io::Write,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use rmcp_guard::{
    audit::{AuditLog, Event},
    ops::SqliteStore,
    outcome::Outcome,
};

/// Runs `guard-audit` with `args`: its exit code, stdout and stderr.
pub fn guard_audit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_guard-audit"))
        .args(args)
        .output()
        .expect("guard-audit runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `guard-audit` with `args` and `input` on its standard input, stopping it if it has
/// not finished after 20 s: its exit code, stdout and stderr (`None`: it hung).
pub fn guard_audit_fed(args: &[&str], input: &[u8]) -> Option<(i32, String, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_guard-audit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("guard-audit runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A reader that stops early closes the pipe; the writer's error is then expected.
    let feeding = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    feeding.join().unwrap();
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Appends one `delete_file` record per number of `range` (trace `trace-N`) to the log
/// named `origin` in the SQLite store `db`.
pub async fn append(db: &Path, origin: &str, range: std::ops::Range<usize>) {
    let log = AuditLog::new(SqliteStore::open(db).unwrap(), origin);
    for i in range {
        let event = Event::new("delete_file", Outcome::Executed, format!("trace-{i}"))
            .identity("acme", "alice")
            .field("target", format!("file-{i}.log"))
            .field("preview", format!("Delete file-{i}.log (12 bytes)"));
        log.append(None, &event).await.unwrap();
    }
}
