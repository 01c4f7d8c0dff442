//! The verifier only reads: a foreign SQLite file, a store of another schema version and a
//! store with a planted legacy audit table are refused by every command, with a message and a
//! non-zero exit, and stay byte-for-byte as they were (with their `-wal` and `-shm`, if any).

use std::path::{Path, PathBuf};

use rmcp_guard::audit::{
    CheckpointSigner,
    merkle::{leaf_hash, root},
};

use crate::common::{append, guard_audit};

/// The SHA-256 of the database file and of each SQLite file beside it (`None`: absent).
fn snapshot(db: &Path) -> Vec<(PathBuf, Option<String>)> {
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| {
            let mut path = db.as_os_str().to_owned();
            path.push(suffix);
            let path = PathBuf::from(path);
            let hash = std::fs::read(&path).ok().map(|bytes| {
                leaf_hash(&bytes)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect()
            });
            (path, hash)
        })
        .collect()
}

/// Runs `sql` on `db` with a plain connection, and waits until no connection holds the file
/// open (the last one to close folds the write-ahead log back in and removes it).
fn edit(db: &Path, sql: &str) {
    let connection = rusqlite::Connection::open(db).unwrap();
    connection.execute_batch(sql).unwrap();
    drop(connection);
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    while Path::new(&wal).exists() {
        // A store's thread closes its connection after the store is dropped; the last
        // connection to close removes the log.
        std::thread::sleep(std::time::Duration::from_millis(10));
        drop(rusqlite::Connection::open(db).unwrap());
    }
}

/// Every command that reads a store, on `db`: each must refuse it, saying `why`, and leave
/// it untouched; `checkpoint` (the one that writes) too.
fn refused_by_every_command(dir: &Path, db: &Path, why: &str) {
    let key = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (signer, verifier, checkpoint) = (key("signer.key"), key("verifier.key"), key("cp.txt"));
    if !Path::new(&signer).exists() {
        let made = CheckpointSigner::generate("read-only-test").unwrap();
        std::fs::write(&signer, made.to_text()).unwrap();
        std::fs::write(&verifier, made.verifier().to_text()).unwrap();
        std::fs::write(&checkpoint, made.sign("read only test", 0, &root(&[]))).unwrap();
    }
    let db = db.to_str().unwrap();
    let before = snapshot(Path::new(db));
    let commands: [&[&str]; 7] = [
        &["verify", "--db", db],
        &["verify", "--db", db, "--key", &verifier],
        &["show", "--db", db, "trace-1"],
        &["export", "--db", db],
        &[
            "prove",
            "--db",
            db,
            "--trace",
            "trace-1",
            "--checkpoint",
            &checkpoint,
            "--key",
            &verifier,
        ],
        &["receipt", "--db", db, "trace-1", "--key", &verifier],
        &[
            "checkpoint",
            "--db",
            db,
            "--signer",
            &signer,
            "--origin",
            "read only test",
        ],
    ];
    for args in commands {
        let (code, out, err) = guard_audit(args);
        assert_eq!(code, 2, "{args:?} must refuse the store: {out}{err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert_eq!(
            snapshot(Path::new(db)),
            before,
            "{args:?} changed the file or what is beside it"
        );
    }
}

/// A guard store of `records` records in a new directory.
async fn store_of(records: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    append(&db, "read only test", 0..records).await;
    (dir, db)
}

#[tokio::test]
async fn a_foreign_sqlite_file_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.db");
    edit(
        &db,
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
         INSERT INTO notes (body) VALUES ('not a guard store');",
    );
    refused_by_every_command(dir.path(), &db, "no guard audit log");
    // Not a database at all.
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        b"these are not the pages of a SQLite database, not at all......",
    )
    .unwrap();
    let before = snapshot(&junk);
    let (code, _, err) = guard_audit(&["verify", "--db", junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not a database"), "{err}");
    assert_eq!(snapshot(&junk), before);
}

#[tokio::test]
async fn a_store_of_another_schema_version_is_refused_and_left_as_it_was() {
    let (dir, db) = store_of(3).await;
    edit(&db, "UPDATE guard_schema_version SET version = version + 1");
    refused_by_every_command(dir.path(), &db, "newer than this build knows");
    edit(&db, "UPDATE guard_schema_version SET version = version - 2");
    refused_by_every_command(dir.path(), &db, "older than this build's");
    // A store from before versioning (no version table) is older too.
    edit(&db, "DROP TABLE guard_schema_version");
    refused_by_every_command(dir.path(), &db, "schema version 0, older");
}

#[tokio::test]
async fn a_planted_legacy_audit_table_is_refused_and_left_as_it_was() {
    let (dir, db) = store_of(3).await;
    edit(
        &db,
        "CREATE TABLE guard_audit (
             audit_id INTEGER PRIMARY KEY, trace_id TEXT, tenant TEXT, user_id TEXT, tool TEXT,
             op TEXT, operation_id TEXT, target TEXT, summary TEXT, outcome TEXT, at BIGINT);
         INSERT INTO guard_audit (trace_id, tool, outcome, at)
             VALUES ('planted', 'delete_file', 'executed', 1);",
    );
    refused_by_every_command(dir.path(), &db, "`guard_audit`");
    let connection = rusqlite::Connection::open(&db).unwrap();
    let planted: i64 = connection
        .query_row("SELECT COUNT(*) FROM guard_audit", [], |r| r.get(0))
        .unwrap();
    let logged: i64 = connection
        .query_row("SELECT COUNT(*) FROM guard_audit_log", [], |r| r.get(0))
        .unwrap();
    assert_eq!((planted, logged), (1, 3), "nothing was folded in");
}

#[tokio::test]
async fn reading_a_good_store_changes_nothing() {
    let (_dir, db) = store_of(4).await;
    edit(&db, "SELECT 1");
    let before = snapshot(&db);
    let path = db.to_str().unwrap();
    for args in [
        &["verify", "--db", path][..],
        &["show", "--db", path, "trace-2"],
        &["export", "--db", path],
    ] {
        let (code, out, err) = guard_audit(args);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert_eq!(snapshot(&db), before, "{args:?} changed the store");
    }
}

/// An entry committed but not yet sequenced (queued on PostgreSQL; planted here) is pending
/// to every reader: `verify` passes and counts it as pending, `show` prints it as pending,
/// `receipt` says it has none yet; and reading leaves it queued, the file unchanged.
#[tokio::test]
async fn a_pending_entry_is_shown_as_pending_and_left_queued() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    append(&db, "read only test", 0..2).await;
    edit(
        &db,
        "INSERT INTO guard_audit_queue (body, trace_id, tool, outcome, at) VALUES
         ('{\"at\":5,\"outcome\":\"SUBMITTED\",\"tool\":\"confirm_x\",\"trace_id\":\"waiting\"}',
          'waiting', 'confirm_x', 'SUBMITTED', 5)",
    );
    let before = snapshot(&db);
    let path = db.to_str().unwrap();

    let (code, out, err) = guard_audit(&["verify", "--db", path]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("OK: 2 records"), "{out}");
    assert!(
        out.contains("pending: 1 entry committed and not yet sequenced"),
        "{out}"
    );

    let (code, out, err) = guard_audit(&["show", "waiting", "--db", path]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("pending: 1 entry") && out.contains("  pending  "),
        "{out}"
    );
    assert!(out.contains("confirm_x  SUBMITTED"), "{out}");

    let key = dir.path().join("verifier.key");
    let signer = CheckpointSigner::generate("read-only-test").unwrap();
    std::fs::write(&key, signer.verifier().to_text()).unwrap();
    let (code, out, err) = guard_audit(&[
        "receipt",
        "waiting",
        "--db",
        path,
        "--key",
        key.to_str().unwrap(),
    ]);
    assert_ne!(code, 0, "no receipt for a pending record");
    assert!(
        format!("{out}{err}").contains("the record of trace waiting is pending"),
        "{out}{err}"
    );

    let (code, out, _) = guard_audit(&["show", "trace-1", "--db", path]);
    assert_eq!(code, 0, "{out}");
    assert!(
        !out.contains("pending"),
        "another call's story names no pending entry: {out}"
    );

    assert_eq!(snapshot(&db), before, "reading sequenced nothing");
}

/// An anchored store (a signed checkpoint stored) is checked with its key, and the entries
/// still queued are reported there too, on an OK as on a FAILED; without the key it is
/// refused, since the stored checkpoint's signature must be checked.
#[tokio::test]
async fn an_anchored_store_reports_its_pending_entries_on_every_verify() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    append(&db, "read only test", 0..2).await;
    let signer = CheckpointSigner::generate("read-only-test").unwrap();
    let signer_file = dir.path().join("signer.key");
    std::fs::write(&signer_file, signer.to_text()).unwrap();
    let verifier = signer.verifier().to_text();
    let path = db.to_str().unwrap();
    let (code, _, err) = guard_audit(&[
        "checkpoint",
        "--db",
        path,
        "--signer",
        signer_file.to_str().unwrap(),
        "--origin",
        "read only test",
    ]);
    assert_eq!(code, 0, "{err}");
    edit(
        &db,
        "INSERT INTO guard_audit_queue (body, trace_id, tool, outcome, at) VALUES
         ('{\"at\":5,\"outcome\":\"SUBMITTED\",\"tool\":\"confirm_x\",\"trace_id\":\"waiting\"}',
          'waiting', 'confirm_x', 'SUBMITTED', 5)",
    );
    let policy = dir.path().join("policy.txt");
    std::fs::write(&policy, format!("log {verifier}\nquorum none\n")).unwrap();

    for trust in [["--key", &verifier], ["--policy", policy.to_str().unwrap()]] {
        let (code, out, err) = guard_audit(&["verify", "--db", path, trust[0], trust[1]]);
        assert_eq!(code, 0, "{trust:?}: {out}{err}");
        assert!(
            out.starts_with("OK: 2 records")
                && out.contains("pending: 1 entry committed and not yet sequenced"),
            "{trust:?}: {out}"
        );
    }
    let (code, _, err) = guard_audit(&["verify", "--db", path]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--key"), "{err}");

    append(&db, "read only test", 2..3).await;
    let (code, out, _) = guard_audit(&["verify", "--db", path, "--key", &verifier]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("come after the last anchored checkpoint")
            && out.contains("pending: 1 entry committed and not yet sequenced"),
        "{out}"
    );
}
