//! A server anchors its audit log as it writes. With `--witness-policy`, safe-ops has its
//! checkpoints cosigned by the policy's witnesses while it serves and once more on exit, so
//! what a later operator could rewrite ends at the last witnessed checkpoint; a witness that
//! is down holds up no call, and the outage is in the server's log. A log key other users
//! can read, or a policy that does not trust the key, stops the server at startup.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use rmcp_guard::{
    audit::{AuditLog, CheckpointSigner, LocalWitness, WitnessSigner},
    ops::SqliteStore,
};
use serde_json::json;

use crate::support::{
    external::{example_bin, workspace_root},
    stdio::{StdioServer, safe_ops_bin},
};

/// The name safe-ops' log carries in its checkpoints.
const ORIGIN: &str = "safe-ops audit log";

/// The log key (mode 0600) and a policy trusting it and the witness `w1` at `url` with key
/// `witness` (a verifier key's text), one cosignature required.
fn keys_and_policy(dir: &Path, log: &CheckpointSigner, witness: &str, url: &str) {
    write_private(&dir.join("log.key"), &log.to_text());
    std::fs::write(
        dir.join("policy.txt"),
        format!(
            "log {}\nwitness w1 {witness} {url}\nquorum w1\n",
            log.verifier().to_text()
        ),
    )
    .unwrap();
}

/// A fresh log key, and the verifier key of a witness that is never run.
fn log_key_and_a_witness_key() -> (CheckpointSigner, String) {
    let witness = WitnessSigner::generate("witness.test/w1").unwrap();
    (
        CheckpointSigner::generate("safe-ops-test").unwrap(),
        witness.verifier().to_text(),
    )
}

fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn witnessed_args(dir: &Path, every: &str) -> Vec<String> {
    vec![
        "--witness-policy".into(),
        dir.join("policy.txt").display().to_string(),
        "--log-key".into(),
        dir.join("log.key").display().to_string(),
        "--checkpoint-every".into(),
        every.into(),
    ]
}

fn start(dir: &Path, args: &[String]) -> StdioServer {
    drop(safe_ops::db::open(&dir.join("ops.db")).expect("seeded database"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    StdioServer::start_in(dir, &args, &[])
}

/// A call that ends, recorded, without asking anyone: there is nothing to delete.
fn unasked_call(server: &mut StdioServer) -> serde_json::Value {
    server
        .request(
            "tools/call",
            json!({"name": "delete_file", "arguments": {"path": "nothing.txt"}}),
        )
        .expect("a result")
}

fn audit_db(dir: &Path) -> PathBuf {
    dir.join("safe-ops").join("audit.db")
}

/// The number of records in the server's log, read as a verifier reads it.
async fn records(dir: &Path) -> u64 {
    let log = AuditLog::new(SqliteStore::open_read_only(audit_db(dir)).unwrap(), ORIGIN);
    log.size().await.unwrap()
}

/// Whether `witness` has cosigned the whole of the server's log, and the log verifies
/// against that checkpoint.
async fn wholly_witnessed(dir: &Path, witness: &LocalWitness) -> bool {
    let log = AuditLog::new(SqliteStore::open_read_only(audit_db(dir)).unwrap(), ORIGIN);
    witness.verify(&log).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_ops_has_its_log_witnessed_while_it_serves_and_on_exit() {
    let dir = tempfile::tempdir().unwrap();
    let log_key = CheckpointSigner::generate("safe-ops-test").unwrap();
    write_private(&dir.path().join("log.key"), &log_key.to_text());
    let witness = LocalWitness::start(
        ORIGIN,
        &log_key.verifier(),
        &dir.path().join("witness.key"),
        &dir.path().join("witness-state.json"),
    )
    .await
    .unwrap();
    std::fs::write(dir.path().join("policy.txt"), witness.policy_text()).unwrap();

    let mut server = start(dir.path(), &witnessed_args(dir.path(), "1"));
    unasked_call(&mut server);
    // While it serves: the witness comes to cosign everything recorded so far.
    let at = dir.path();
    eventually(
        || wholly_witnessed(at, &witness),
        || "the witness never cosigned what the server logged".to_owned(),
    )
    .await;
    let stderr = stop(server).await;
    assert!(
        stderr.contains("the audit log's checkpoints go to witness local-witness"),
        "{stderr}"
    );

    // Restarted with an interval it never reaches: the last calls before the process goes
    // are witnessed on exit all the same, not left unanchored.
    let mut server = start(dir.path(), &witnessed_args(dir.path(), "3600"));
    let last = unasked_call(&mut server);
    assert!(last["_meta"]["guard"]["traceId"].is_string(), "{last}");
    let stderr = stop(server).await;
    assert!(
        wholly_witnessed(dir.path(), &witness).await,
        "the log's end is not witnessed after exit:\n{stderr}"
    );
    witness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_witness_that_is_down_holds_up_no_call_and_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (log_key, witness_vkey) = log_key_and_a_witness_key();
    // A port nobody listens on: the witness is down for the whole run.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    keys_and_policy(dir.path(), &log_key, &witness_vkey, &closed);

    let mut server = start(dir.path(), &witnessed_args(dir.path(), "1"));
    for _ in 0..3 {
        let result = unasked_call(&mut server);
        assert_eq!(
            result["_meta"]["guard"]["outcome"], "precondition_failed",
            "the call ends as it would without a witness: {result}"
        );
    }
    let log = dir.path().join("stderr.log");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    eventually(
        || std::future::ready(read().contains("a witness did not cosign")),
        || format!("the outage never reached the server's log:\n{}", read()),
    )
    .await;
    let stderr = stop(server).await;
    assert!(
        stderr.contains("w1"),
        "the log names the witness:\n{stderr}"
    );
    assert_eq!(records(dir.path()).await, 3, "every call is still recorded");
}

/// Waits (polling, at most 30 s) until `done`; `never` says what did not happen.
async fn eventually<F, Fut>(mut done: F, never: impl Fn() -> String)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done().await {
        assert!(Instant::now() < deadline, "{}", never());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Closes the server's stdin and returns its log once it exited.
async fn stop(server: StdioServer) -> String {
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap()
}

/// The server's startup error for `args`, in a fresh directory (it must not start).
fn refused(bin: &Path, dir: &Path, args: &[String]) -> String {
    let output = Command::new(bin)
        .args(args)
        .arg("--db")
        .arg(dir.join("refused.db"))
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env_remove("GUARD_ALLOWLIST")
        .env("GUARD_TENANT", "acme")
        .env("GUARD_USER", "alice")
        .env("GUARD_SCOPES", "orders:cancel")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the server runs");
    assert!(!output.status.success(), "it started with {args:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_readable_key_or_an_untrusting_policy_stops_the_server_at_startup() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (log_key, witness_vkey) = log_key_and_a_witness_key();
    keys_and_policy(dir.path(), &log_key, &witness_vkey, "http://127.0.0.1:9");
    let args = witnessed_args(dir.path(), "10");
    let order_cancel = example_bin(&workspace_root(), "order-cancel", "ORDER_CANCEL_BIN");

    for bin in [safe_ops_bin(), order_cancel] {
        std::fs::set_permissions(
            dir.path().join("log.key"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let readable = refused(&bin, dir.path(), &args);
        assert!(
            readable.contains("readable by other users") && readable.contains("chmod 600"),
            "{}: {readable}",
            bin.display()
        );

        std::fs::set_permissions(
            dir.path().join("log.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let stranger = CheckpointSigner::generate("someone-else").unwrap();
        std::fs::write(
            dir.path().join("policy.txt"),
            format!(
                "log {}\nwitness w1 {witness_vkey} http://127.0.0.1:9\nquorum w1\n",
                stranger.verifier().to_text()
            ),
        )
        .unwrap();
        let untrusting = refused(&bin, dir.path(), &args);
        assert!(
            untrusting.contains("does not list the log key")
                && untrusting.contains(&format!("log {}", log_key.verifier().to_text())),
            "{}: {untrusting}",
            bin.display()
        );

        std::fs::write(
            dir.path().join("policy.txt"),
            format!("log {}\nquorum none\n", log_key.verifier().to_text()),
        )
        .unwrap();
        let unwitnessed = refused(&bin, dir.path(), &args);
        assert!(
            unwitnessed.contains("names no witness with a URL"),
            "{}: {unwitnessed}",
            bin.display()
        );
        keys_and_policy(dir.path(), &log_key, &witness_vkey, "http://127.0.0.1:9");
    }
}
