//! Anchoring with a witness running as its own process: checkpoints cosigned as the log
//! grows, a log truncated or rolled back past what the witness cosigned fails verification
//! whatever the database still holds, the witness refuses a fork and a rewrite (also after a
//! restart), and a receipt verifies offline and fails after any changed byte.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
};

use rmcp_guard::{audit::AuditLog, ops::SqliteStore};

use crate::common::{append, guard_audit};

/// A `guard-audit witness` process, stopped when dropped.
struct WitnessProcess {
    child: Child,
    url: String,
}

impl WitnessProcess {
    fn start(dir: &Path) -> Self {
        Self::start_on(dir, "127.0.0.1:0")
    }

    fn start_on(dir: &Path, listen: &str) -> Self {
        let at = |name: &str| dir.join(name).to_str().unwrap().to_owned();
        let mut child = Command::new(env!("CARGO_BIN_EXE_guard-audit"))
            .args([
                "witness",
                "--key",
                &at("witness.key"),
                "--logs",
                &at("logs.txt"),
                "--state",
                &at("witness-state.json"),
                "--listen",
                listen,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the witness starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("witness listening on ")
            .unwrap_or_else(|| panic!("no address from the witness: {line:?}"))
            .to_owned();
        Self { child, url }
    }
}

impl Drop for WitnessProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    /// A directory with a log key, a witness key, the witness's logs file and its new
    /// state: the keys' public halves.
    fn new() -> (Self, String, String) {
        let s = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        let log_key = s.keys("ops-audit", "log");
        let witness_key = s.keys("witness.example/w1", "witness");
        std::fs::write(s.at("logs.txt"), format!("{log_key} witnessed log\n")).unwrap();
        let (code, out, err) =
            guard_audit(&["witness", "init", "--state", &s.at("witness-state.json")]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.starts_with("made the state of a new witness"), "{out}");
        (s, log_key, witness_key)
    }

    fn at(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }

    fn keys(&self, name: &str, kind: &str) -> String {
        let (code, keys, err) = guard_audit(&["keygen", name, "--for", kind]);
        assert_eq!(code, 0, "{err}");
        let mut lines = keys.lines();
        let secret = format!("{kind}.key");
        std::fs::write(self.at(&secret), lines.next().unwrap()).unwrap();
        lines.next().unwrap().to_owned()
    }

    fn policy(&self, log_key: &str, witness_key: &str, url: &str) -> String {
        let path = self.at("policy.txt");
        std::fs::write(
            &path,
            format!("log {log_key}\nwitness w1 {witness_key} {url}\nquorum w1\n"),
        )
        .unwrap();
        path
    }

    fn checkpoint(&self, db: &str) -> (i32, String, String) {
        guard_audit(&[
            "checkpoint",
            "--db",
            db,
            "--signer",
            &self.at("log.key"),
            "--origin",
            "witnessed log",
            "--policy",
            &self.at("policy.txt"),
        ])
    }

    fn verify(&self, db: &str, extra: &[&str]) -> (i32, String, String) {
        let mut args = vec!["verify", "--db", db];
        args.extend_from_slice(extra);
        guard_audit(&args)
    }
}

/// Runs a second `guard-audit witness` in `dir` on the state `state`, and waits up to 20 s
/// for it to exit: its exit code and stderr. One that starts serving fails the test.
fn second_witness(dir: &Path, state: &str) -> (i32, String) {
    let at = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let mut child = Command::new(env!("CARGO_BIN_EXE_guard-audit"))
        .args([
            "witness",
            "--key",
            &at("witness.key"),
            "--logs",
            &at("logs.txt"),
            "--state",
            state,
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the witness starts");
    for _ in 0..400 {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("a second witness on {state} started serving");
}

fn copy(from: &str, to: &str) -> String {
    std::fs::copy(from, to).unwrap();
    to.to_owned()
}

fn sql(db: &str, statements: &str) {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(statements)
        .unwrap();
}

#[tokio::test]
async fn a_witnessed_log_cannot_be_truncated_or_rolled_back_and_its_receipts_hold() {
    let (s, log_key, witness_key) = Setup::new();
    let witness = WitnessProcess::start(s.dir.path());
    let policy = s.policy(&log_key, &witness_key, &witness.url);
    let db = s.at("audit.db");

    // Unanchored: with a policy (or the key alone) that is a failure, not an OK.
    append(Path::new(&db), "witnessed log", 0..5).await;
    let (code, out, _) = s.verify(&db, &["--policy", &policy]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not anchored"), "{out}");
    let (code, out, _) = s.verify(&db, &["--key", &log_key]);
    assert_eq!(code, 1, "{out}");

    let (code, note, err) = s.checkpoint(&db);
    assert_eq!(code, 0, "{note}{err}");
    assert!(note.contains("\u{2014} witness.example/w1 "), "{note}");
    let (code, out, err) = s.verify(&db, &["--policy", &policy]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("OK: 5 records form one chain") && out.contains("cosigned by w1"),
        "{out}"
    );

    // Records after the last witnessed checkpoint are reported, until the next one.
    append(Path::new(&db), "witnessed log", 5..9).await;
    let (code, out, _) = s.verify(&db, &["--policy", &policy]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("records 5 to 8 come after"), "{out}");
    let (code, kept, err) = s.checkpoint(&db);
    assert_eq!(code, 0, "{err}");
    // The cosigned checkpoint, as an auditor keeps it.
    std::fs::write(s.at("kept.txt"), &kept).unwrap();
    let (code, out, err) = s.verify(&db, &["--policy", &policy]);
    assert_eq!(code, 0, "{out}{err}");

    // Truncation: the checkpoints deleted and the log cut back to 5 records.
    let cut = copy(&db, &s.at("cut.db"));
    sql(
        &cut,
        "DELETE FROM guard_audit_checkpoints; DELETE FROM guard_audit_cosignatures;
         DELETE FROM guard_audit_log WHERE seq >= 5;",
    );
    let (code, out, _) = s.verify(&cut, &["--policy", &policy]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not anchored"), "{out}");
    // Asked by the log's name, the witness serves what it cosigned; so does a kept copy.
    for extra in [
        ["--origin", "witnessed log"],
        ["--checkpoint", &s.at("kept.txt")],
    ] {
        let mut args = vec!["--policy", &policy];
        args.extend(extra);
        let (code, out, err) = s.verify(&cut, &args);
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            out.contains("record 5") && out.contains("truncated"),
            "{out}"
        );
    }
    // Rollback: the stored checkpoint rolled back to the older genuine, witnessed one.
    let back = copy(&db, &s.at("back.db"));
    sql(
        &back,
        "DELETE FROM guard_audit_checkpoints WHERE size > 5;
         DELETE FROM guard_audit_cosignatures WHERE size > 5;
         DELETE FROM guard_audit_log WHERE seq >= 5;",
    );
    let (code, out, _) = s.verify(&back, &["--policy", &policy]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("truncated"), "{out}");

    // A receipt for a call, checked offline.
    let receipt = s.at("trace-3.tlog-proof");
    let (code, out, err) = guard_audit(&[
        "receipt", "--db", &db, "trace-3", "--policy", &policy, "--out", &receipt,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // A filtered export comes with the proofs that tie it to the witnessed checkpoint.
    let (code, export, err) = guard_audit(&[
        "export",
        "--db",
        &db,
        "--since",
        "0",
        "--trace",
        "trace-6",
        "--proofs",
        &s.at("proofs.txt"),
        "--policy",
        &policy,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(export.lines().count(), 1);
    let (_, range, _) = guard_audit(&["export", "--db", &db]);
    let (code, _, err) = guard_audit(&[
        "export",
        "--db",
        &db,
        "--since",
        "0",
        "--proofs",
        &s.at("all-proofs.txt"),
        "--policy",
        &policy,
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(s.at("one.jsonl"), &export).unwrap();
    let verify_export = |file: &str, proofs: &str| {
        guard_audit(&[
            "verify", "--file", file, "--proofs", proofs, "--policy", &policy,
        ])
    };
    let (code, out, err) = verify_export(&s.at("one.jsonl"), &s.at("proofs.txt"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("OK: the 1 records of the export are in the log `witnessed log` of 9"),
        "{out}"
    );
    std::fs::write(s.at("all.jsonl"), &range).unwrap();
    let (code, out, err) = verify_export(&s.at("all.jsonl"), &s.at("all-proofs.txt"));
    assert_eq!(code, 0, "{out}{err}");
    // Without its proofs, the filtered export is a chain with a gap.
    let (code, out, _) = guard_audit(&["verify", "--file", &s.at("one.jsonl")]);
    assert_eq!(code, 1, "{out}");
    for forged in [
        export.replace("file-6.log", "file-7.log"),
        export.replace("trace-6", "trace-7"),
        String::new(),
        format!("{export}{export}"),
    ] {
        std::fs::write(s.at("forged.jsonl"), &forged).unwrap();
        let (code, out, _) = verify_export(&s.at("forged.jsonl"), &s.at("proofs.txt"));
        assert_eq!(code, 1, "{forged}: {out}");
    }
    // Another record under the proof of record 6: refused.
    std::fs::write(
        s.at("moved.jsonl"),
        range.lines().nth(5).unwrap().to_owned() + "\n",
    )
    .unwrap();
    assert_eq!(
        verify_export(&s.at("moved.jsonl"), &s.at("proofs.txt")).0,
        1
    );

    drop(witness);
    let verify_receipt = |path: &str| {
        guard_audit(&[
            "verify-proof",
            "--proof",
            path,
            "--origin",
            "witnessed log",
            "--policy",
            &policy,
            "--trace",
            "trace-3",
        ])
    };
    let (code, out, err) = verify_receipt(&receipt);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("OK: record 3 (delete_file executed, trace trace-3)")
            && out.contains("cosigned by w1"),
        "{out}"
    );
    let text = std::fs::read(&receipt).unwrap();
    assert!(text.starts_with(b"c2sp.org/tlog-proof@v1\nextra "));
    // Every section: each line's first and last byte, and every fifth byte between.
    let mut positions: Vec<usize> = (0..text.len()).step_by(5).collect();
    for (i, &b) in text.iter().enumerate() {
        if b == b'\n' {
            positions.extend([i, i + 1, i.saturating_sub(1)]);
        }
    }
    positions.retain(|&p| p < text.len());
    positions.sort_unstable();
    positions.dedup();
    let changed = s.at("changed.tlog-proof");
    for p in positions {
        let mut bytes = text.clone();
        bytes[p] ^= 0x01;
        std::fs::write(&changed, &bytes).unwrap();
        let (code, out, _) = verify_receipt(&changed);
        assert_ne!(
            code, 0,
            "byte {p} changed and the receipt still verifies: {out}"
        );
    }
}

#[tokio::test]
async fn the_witness_refuses_a_fork_and_a_rewrite_also_after_a_restart() {
    let (s, log_key, witness_key) = Setup::new();
    let witness = WitnessProcess::start(s.dir.path());
    s.policy(&log_key, &witness_key, &witness.url);
    let db = s.at("audit.db");
    append(Path::new(&db), "witnessed log", 0..4).await;
    assert_eq!(s.checkpoint(&db).0, 0);

    // Another history under the same name and key: the witness will not cosign it.
    let fork = s.at("fork.db");
    append(Path::new(&fork), "witnessed log", 10..14).await;
    let (code, out, err) = s.checkpoint(&fork);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("refused") && err.contains("422"), "{err}");

    // A rewrite of the first records, recomputed and extended: refused too.
    let rewritten = s.at("rewritten.db");
    append(Path::new(&rewritten), "witnessed log", 20..30).await;
    assert_eq!(s.checkpoint(&rewritten).0, 1);

    // After a restart the witness still knows the log: it extends, and still refuses.
    drop(witness);
    let witness = WitnessProcess::start(s.dir.path());
    s.policy(&log_key, &witness_key, &witness.url);
    assert_eq!(s.checkpoint(&fork).0, 1);
    append(Path::new(&db), "witnessed log", 4..6).await;
    let (code, out, err) = s.checkpoint(&db);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = s.verify(&db, &["--policy", &s.at("policy.txt")]);
    assert_eq!(code, 0, "{out}{err}");

    // A witness that is down: the checkpoint stands, the failure is said, verify fails.
    drop(witness);
    append(Path::new(&db), "witnessed log", 6..7).await;
    let (code, out, err) = s.checkpoint(&db);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("did not cosign") && err.contains("cannot reach"),
        "{err}"
    );
    let (code, out, _) = s.verify(&db, &["--policy", &s.at("policy.txt")]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("records 6 to 6 come after"), "{out}");
}

#[tokio::test]
async fn a_second_witness_on_the_same_state_is_refused_under_any_name() {
    let (s, log_key, witness_key) = Setup::new();
    let witness = WitnessProcess::start(s.dir.path());
    s.policy(&log_key, &witness_key, &witness.url);
    let db = s.at("audit.db");
    append(Path::new(&db), "witnessed log", 0..3).await;
    assert_eq!(s.checkpoint(&db).0, 0);

    let state = s.at("witness-state.json");
    std::os::unix::fs::symlink(&state, s.at("link.json")).unwrap();
    std::fs::hard_link(&state, s.at("hard.json")).unwrap();
    std::fs::create_dir(s.at("x")).unwrap();
    let dotted = s.dir.path().join("x/../witness-state.json");
    let running = format!("(process {})", witness.child.id());
    for other in [
        s.at("link.json"),
        s.at("hard.json"),
        dotted.to_str().unwrap().to_owned(),
    ] {
        let (code, err) = second_witness(s.dir.path(), &other);
        assert_eq!(code, 2, "{other}: {err}");
        assert!(
            err.contains("witness") && err.contains(&running) && err.contains("stop"),
            "{other}: {err}"
        );
    }
    // The first one still serves, alone.
    append(Path::new(&db), "witnessed log", 3..5).await;
    let (code, out, err) = s.checkpoint(&db);
    assert_eq!(code, 0, "{out}{err}");
}

#[tokio::test]
async fn a_witness_never_starts_on_a_missing_emptied_or_older_state() {
    let (s, log_key, witness_key) = Setup::new();
    let state = s.at("witness-state.json");
    // A state is made once: init refuses an existing one.
    let (code, _, err) = guard_audit(&["witness", "init", "--state", &state]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("already exists"), "{err}");
    // A witness never initialised does not start.
    let (code, err) = second_witness(s.dir.path(), &s.at("never.json"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("witness init --state"), "{err}");

    let witness = WitnessProcess::start(s.dir.path());
    s.policy(&log_key, &witness_key, &witness.url);
    let db = s.at("audit.db");
    append(Path::new(&db), "witnessed log", 0..3).await;
    assert_eq!(s.checkpoint(&db).0, 0);
    let older = std::fs::read(&state).unwrap();
    append(Path::new(&db), "witnessed log", 3..6).await;
    assert_eq!(s.checkpoint(&db).0, 0);
    drop(witness);
    let newest = std::fs::read(&state).unwrap();

    // Emptied, or restored from an older genuine copy: refused.
    for (what, bytes) in [("{}", b"{}".to_vec()), ("an older copy", older)] {
        std::fs::write(&state, &bytes).unwrap();
        let (code, err) = second_witness(s.dir.path(), &state);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(
            err.contains("older than what this witness cosigned") && err.contains("6 records"),
            "{what}: {err}"
        );
    }
    // Deleted: refused, and init will not make a new one over its record.
    std::fs::remove_file(&state).unwrap();
    let (code, err) = second_witness(s.dir.path(), &state);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is gone"), "{err}");
    let (code, _, err) = guard_audit(&["witness", "init", "--state", &state]);
    assert_eq!(code, 2, "{err}");

    // The newest state restored: the witness starts, and still refuses a fork.
    std::fs::write(&state, &newest).unwrap();
    let witness = WitnessProcess::start(s.dir.path());
    s.policy(&log_key, &witness_key, &witness.url);
    let fork = s.at("fork.db");
    append(Path::new(&fork), "witnessed log", 10..16).await;
    assert_eq!(s.checkpoint(&fork).0, 1);
}

#[tokio::test]
async fn verify_fails_on_an_unreachable_witness_with_require_witness() {
    let (s, log_key, witness_key) = Setup::new();
    let witness = WitnessProcess::start(s.dir.path());
    let policy = s.policy(&log_key, &witness_key, &witness.url);
    let db = s.at("audit.db");
    append(Path::new(&db), "witnessed log", 0..3).await;
    assert_eq!(s.checkpoint(&db).0, 0);
    let (code, out, err) = s.verify(&db, &["--policy", &policy, "--require-witness"]);
    assert_eq!(code, 0, "{out}{err}");

    drop(witness);
    // By default a witness that is down is a warning, and the checkpoints at hand decide.
    let (code, out, err) = s.verify(&db, &["--policy", &policy]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("could not ask witness w1"), "{err}");
    // For an audit it is a failure.
    let (code, out, err) = s.verify(&db, &["--policy", &policy, "--require-witness"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("could not ask witness w1")
            && err.contains("--require-witness makes that a failure"),
        "{err}"
    );
    let (code, _, err) = s.verify(&db, &["--key", &log_key, "--require-witness"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("names witnesses"), "{err}");
}

#[tokio::test]
async fn the_server_side_anchor_keeps_going_through_a_witness_outage() {
    use rmcp_guard::audit::{Anchor, CheckpointSigner, Policy};

    let (s, log_key, witness_key) = Setup::new();
    // Learn a free port, then leave the witness down.
    let url = WitnessProcess::start(s.dir.path()).url.clone();
    let policy_path = s.policy(&log_key, &witness_key, &url);
    let policy = Policy::parse(&std::fs::read_to_string(&policy_path).unwrap()).unwrap();
    let signer =
        CheckpointSigner::parse(&std::fs::read_to_string(s.at("log.key")).unwrap()).unwrap();
    let db = s.at("audit.db");
    let log = AuditLog::new(SqliteStore::open(&db).unwrap(), "witnessed log");
    let anchor = Anchor::new(log.clone(), signer, &policy).unwrap();
    let running = anchor.spawn(std::time::Duration::from_millis(50));

    append(Path::new(&db), "witnessed log", 0..3).await;
    let down = wait_for(&anchor, |s| s.failures > 0).await;
    assert!(
        down.error
            .as_deref()
            .unwrap_or_default()
            .contains("cannot reach"),
        "{down:?}"
    );
    assert_eq!(down.cosigned, None);
    // The log takes records all the while.
    append(Path::new(&db), "witnessed log", 3..5).await;

    let witness = WitnessProcess::start_on(s.dir.path(), url.trim_start_matches("http://"));
    let up = wait_for(&anchor, |s| s.cosigned == Some(5)).await;
    assert_eq!((up.error, up.failures), (None, 0));
    running.abort();
    let latest = log.latest_checkpoint().await.unwrap().unwrap();
    assert_eq!(policy.open(&latest).unwrap().cosigned_by, ["w1".to_owned()]);
    let (code, out, err) = s.verify(&db, &["--policy", &policy_path]);
    assert_eq!(code, 0, "{out}{err}");
    drop(witness);
}

/// The first witness status that satisfies `done`, polled for up to 20 s.
async fn wait_for(
    anchor: &rmcp_guard::audit::Anchor,
    done: impl Fn(&rmcp_guard::audit::WitnessStatus) -> bool,
) -> rmcp_guard::audit::WitnessStatus {
    for _ in 0..400 {
        if let Some(status) = anchor.status().into_iter().find(&done) {
            return status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the anchor never got there: {:?}", anchor.status());
}
