//! What the binary's test files share: running `guard-audit`, and a log to run it on.

use std::{path::Path, process::Command};

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
