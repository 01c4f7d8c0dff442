//! The audit log: every way of tampering with an exported log is caught and the record
//! named; several processes appending to one store keep one log; a record written in a
//! store transaction commits or rolls back with it; the old `guard_audit` table moves into
//! the log; redacted answers reach neither the log, nor its tracing mirror, nor an export.

use crate::support;

use std::{path::Path, process::Command};

use rmcp_guard::outcome::Outcome;
use rmcp_guard::{
    audit::{
        AuditLog, Checkpoint, CheckpointSigner, ConsistencyProof, Event, FaultKind, InclusionProof,
        export, split_line, verify_export,
    },
    ops::{OperationStore, PgStore, SqliteStore},
};
use serde_json::json;

const ORIGIN: &str = "guard audit test";

/// A log of `n` varied records in a fresh SQLite store.
async fn sample_log(dir: &Path, n: usize) -> AuditLog {
    let log = AuditLog::new(
        SqliteStore::open(dir.join("audit.db")).expect("store"),
        ORIGIN,
    );
    for i in 0..n {
        let mut event = Event::new(
            ["delete_file", "drop_table", "confirm_order_cancel"][i % 3],
            [
                Outcome::Executed,
                Outcome::Declined,
                Outcome::Submitted,
                Outcome::HiddenTool,
            ][i % 4],
            format!("trace-{i}"),
        )
        .identity("acme", "alice")
        .field("target", format!("f\"{i}\"\tü\n"))
        .field("answer", json!({"ok": true, "n": i}));
        if i % 2 == 1 {
            event = event.digest("args_sha256", &json!({"path": i}));
        }
        log.append(None, &event).await.expect("append");
    }
    log
}

/// The export and its signed checkpoint.
async fn exported(log: &AuditLog) -> (Vec<u8>, Checkpoint, CheckpointSigner) {
    let signer = CheckpointSigner::generate("audit-test").unwrap();
    let note = log.checkpoint(&signer).await.expect("checkpoint");
    let checkpoint = signer.verifier().open(&note).expect("own checkpoint opens");
    let text = export(&log.records().await.expect("records"));
    (text.into_bytes(), checkpoint, signer)
}

fn lines(text: &[u8]) -> Vec<Vec<u8>> {
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

#[tokio::test]
async fn every_mutation_of_an_exported_log_is_caught_and_the_record_named() {
    let dir = tempfile::tempdir().unwrap();
    let n = 9;
    let log = sample_log(dir.path(), n).await;
    let (text, cp, _) = exported(&log).await;
    let verified = verify_export(&text, Some(&cp)).expect("the untouched export verifies");
    assert_eq!(
        (verified.records, verified.checkpointed),
        (n as u64, n as u64)
    );
    let original = lines(&text);
    let mut cases = 0u64;

    // Every single-byte change (all 255 other values) of a sample of records: the first,
    // one in the middle and the last, each with its newline.
    let mut offset = 0;
    for (k, line) in original.iter().enumerate() {
        if [0, n / 2, n - 1].contains(&k) {
            for at in offset..offset + line.len() + 1 {
                for value in 0..=255u8 {
                    if value == text[at] {
                        continue;
                    }
                    let mut forged = text.clone();
                    forged[at] = value;
                    let fault =
                        verify_export(&forged, Some(&cp)).expect_err("a changed byte is caught");
                    assert_eq!(
                        (fault.kind, fault.position),
                        (FaultKind::Modified, k),
                        "byte {at} -> {value}: {fault}"
                    );
                    cases += 1;
                }
            }
        }
        offset += line.len() + 1;
    }

    // Each deletion: a hole is named as deleted, the last record as truncated.
    for k in 0..n {
        let mut forged = original.clone();
        forged.remove(k);
        let fault = verify_export(&join(&forged), Some(&cp)).expect_err("deletion caught");
        let kind = if k == n - 1 {
            FaultKind::Truncated
        } else {
            FaultKind::Deleted
        };
        assert_eq!(
            (fault.kind, fault.seq),
            (kind, k as u64),
            "delete {k}: {fault}"
        );
        cases += 1;
    }

    // Each insertion of a copy of each record at each place: the record named is a copy.
    for at in 0..=n {
        for j in 0..n {
            let mut forged = original.clone();
            forged.insert(at, original[j].clone());
            let fault = verify_export(&join(&forged), Some(&cp)).expect_err("copy caught");
            assert_eq!(
                fault.kind,
                FaultKind::Inserted,
                "copy of {j} at {at}: {fault}"
            );
            assert_eq!(
                forged[fault.position], original[j],
                "copy of {j} at {at}: {fault}"
            );
            cases += 1;
        }
    }

    // Each insertion of a well-formed record made up to fit the chain at its place.
    for at in 0..n {
        let prev = if at == 0 {
            [0u8; 32]
        } else {
            split_line(&original[at - 1]).unwrap().0
        };
        let entry =
            Event::new("delete_file", Outcome::Executed, "forged").entry(at as u64, &prev, 1);
        let hash = rmcp_guard::audit::merkle::leaf_hash(entry.as_bytes());
        let line = format!(
            "{{\"hash\":\"{}\",{}",
            hash.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            &entry[1..]
        );
        let mut forged = original.clone();
        forged.insert(at, line.into_bytes());
        let fault = verify_export(&join(&forged), Some(&cp)).expect_err("forgery caught");
        assert_eq!(
            (fault.kind, fault.position),
            (FaultKind::Inserted, at),
            "forged at {at}: {fault}"
        );
        cases += 1;
    }

    // Each swap of two records.
    for i in 0..n {
        for j in i + 1..n {
            let mut forged = original.clone();
            forged.swap(i, j);
            let fault = verify_export(&join(&forged), Some(&cp)).expect_err("swap caught");
            assert_eq!(
                (fault.kind, fault.position, fault.seq),
                (FaultKind::Reordered, i, j as u64),
                "swap {i} {j}: {fault}"
            );
            cases += 1;
        }
    }

    // Each truncation before the checkpoint's size.
    for keep in 0..n {
        let fault = verify_export(&join(&original[..keep]), Some(&cp)).expect_err("truncation");
        assert_eq!(
            (fault.kind, fault.seq),
            (FaultKind::Truncated, keep as u64),
            "keep {keep}: {fault}"
        );
        cases += 1;
    }
    assert!(cases > 100_000, "{cases} mutations checked");
}

fn hex(hash: &[u8]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The lines with records `range` edited by `edit` (given the record's number and entry)
/// and their hashes recomputed, each after the first chained to the one before it, as
/// someone holding the database would do.
fn recomputed(
    original: &[Vec<u8>],
    range: std::ops::Range<usize>,
    edit: impl Fn(usize, String) -> String,
) -> Vec<Vec<u8>> {
    let mut lines = original.to_vec();
    let mut prev: Option<[u8; 32]> = None;
    for i in range {
        let (_, entry) = split_line(&original[i]).unwrap();
        let mut entry = edit(i, String::from_utf8(entry).unwrap());
        if let Some(prev) = prev {
            let at = entry.find("\"prev\":\"").unwrap() + 8;
            entry.replace_range(at..at + 64, &hex(&prev));
        }
        let hash = rmcp_guard::audit::merkle::leaf_hash(entry.as_bytes());
        lines[i] = format!("{{\"hash\":\"{}\",{}", hex(&hash), &entry[1..]).into_bytes();
        prev = Some(hash);
    }
    lines
}

#[tokio::test]
async fn a_recomputed_record_is_named_and_a_rewrite_from_the_first_unvouched_record() {
    let dir = tempfile::tempdir().unwrap();
    let n = 7;
    let log = sample_log(dir.path(), n).await;
    let (text, head, signer) = exported(&log).await;
    let original = lines(&text);
    let leaves = log.leaves().await.unwrap();
    let older: Vec<Checkpoint> = (1..n)
        .map(|m| {
            let note = signer.sign(
                ORIGIN,
                m as u64,
                &rmcp_guard::audit::merkle::root(&leaves[..m]),
            );
            signer.verifier().open(&note).unwrap()
        })
        .collect();
    let edit = |_: usize, entry: String| entry.replace("alice", "mallory");

    // One record edited and its hash recomputed: that record is named, not the genuine
    // one after it, with or without the checkpoint.
    for k in 0..n - 1 {
        let forged = join(&recomputed(&original, k..k + 1, edit));
        // The record after the last-but-one is the log's last: nothing but the checkpoint
        // tells a recomputed record from a made-up last one (below).
        let checkpoints = if k + 2 == n {
            vec![Some(&head)]
        } else {
            vec![None, Some(&head)]
        };
        for cp in checkpoints {
            let fault = verify_export(&forged, cp).expect_err("a recomputed record is caught");
            assert_eq!(
                (fault.kind, fault.position, fault.seq),
                (FaultKind::Modified, k, k as u64),
                "record {k} recomputed: {fault}"
            );
            assert!(fault.detail.contains("recomputed"), "{fault}");
        }
    }
    // The last two records, the last one being the edited one's only witness: the
    // checkpoint decides.
    let mut short = original[..n - 1].to_vec();
    short = recomputed(&short, n - 3..n - 2, edit);
    let six = &older[n - 2];
    let fault = verify_export(&join(&short), Some(six)).expect_err("caught");
    assert_eq!(
        (fault.kind, fault.seq),
        (FaultKind::Modified, (n - 3) as u64),
        "{fault}"
    );

    // History rewritten from record k on, every later hash recomputed: the records the
    // older checkpoints still vouch for end at k, so record k is named.
    for k in 0..n {
        let forged = join(&recomputed(&original, k..n, edit));
        assert!(
            verify_export(&forged, None).is_ok(),
            "a chain alone can be recomputed"
        );
        let fault = rmcp_guard::audit::verify_export_against(&forged, Some(&head), &older)
            .expect_err("the checkpoint holds");
        assert_eq!(
            (fault.kind, fault.position, fault.seq),
            (FaultKind::Rewritten, k, k as u64),
            "rewritten from {k}: {fault}"
        );
    }
    // Without older checkpoints nothing vouches for any record, and the finding says so.
    let forged = join(&recomputed(&original, 3..n, edit));
    let fault = verify_export(&forged, Some(&head)).expect_err("caught");
    assert_eq!(
        (fault.kind, fault.seq),
        (FaultKind::Rewritten, 0),
        "{fault}"
    );
    assert!(fault.detail.contains("give older ones"), "{fault}");
}

#[tokio::test]
async fn a_rewritten_history_fails_the_checkpoint_and_proofs_hold_only_for_the_real_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = sample_log(dir.path(), 5).await;
    let (text, old, signer) = exported(&log).await;
    // Rewrite record 2 and recompute every hash after it: a consistent chain, another root.
    let mut prev = [0u8; 32];
    let mut rewritten = Vec::new();
    for (i, line) in lines(&text).iter().enumerate() {
        let (_, entry) = split_line(line).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&entry).unwrap();
        let outcome = if i == 2 {
            "declined"
        } else {
            value["outcome"].as_str().unwrap()
        };
        let entry = Event::new(value["tool"].as_str().unwrap(), outcome, "x").entry(
            i as u64,
            &prev,
            value["at"].as_i64().unwrap(),
        );
        prev = rmcp_guard::audit::merkle::leaf_hash(entry.as_bytes());
        let hex: String = prev.iter().map(|b| format!("{b:02x}")).collect();
        rewritten.push(format!("{{\"hash\":\"{hex}\",{}", &entry[1..]).into_bytes());
    }
    assert!(
        verify_export(&join(&rewritten), None).is_ok(),
        "a chain alone can be recomputed"
    );
    let fault = verify_export(&join(&rewritten), Some(&old)).expect_err("the checkpoint holds");
    assert_eq!(fault.kind, FaultKind::Rewritten);

    // Inclusion and consistency against signed heads.
    let leaves = log.leaves().await.unwrap();
    for seq in 0..5 {
        assert!(InclusionProof::new(&leaves, seq, 5).unwrap().verify(&old));
    }
    for i in 5..8 {
        log.append(
            None,
            &Event::new("deploy", Outcome::Executed, format!("later-{i}")),
        )
        .await
        .unwrap();
    }
    let new = signer
        .verifier()
        .open(&log.checkpoint(&signer).await.unwrap())
        .unwrap();
    let leaves = log.leaves().await.unwrap();
    let proof = ConsistencyProof::new(&leaves, old.size, new.size).unwrap();
    assert!(proof.verify(&old, &new));
    let forged_leaves: Vec<_> = rewritten
        .iter()
        .map(|l| split_line(l).unwrap().0)
        .chain(leaves[5..].iter().copied())
        .collect();
    let forged = ConsistencyProof::new(&forged_leaves, old.size, new.size).unwrap();
    assert!(
        !forged.verify(&old, &new),
        "a rewritten prefix is not consistent"
    );
    assert!(ConsistencyProof::new(&leaves, 8, 5).is_err());
}

#[tokio::test]
async fn a_record_written_in_a_transaction_commits_and_rolls_back_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("audit.db")).unwrap();
    let log = AuditLog::new(store.clone(), ORIGIN);
    let mut tx = store.begin().await.unwrap();
    tx.execute("CREATE TABLE IF NOT EXISTS effects (x TEXT)", &[])
        .await
        .unwrap();
    tx.execute("INSERT INTO effects VALUES ('gone')", &[])
        .await
        .unwrap();
    log.append(
        Some(&mut tx),
        &Event::new("t", Outcome::Submitted, "rolled-back"),
    )
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    assert!(log.records().await.unwrap().is_empty());

    let mut tx = store.begin().await.unwrap();
    tx.execute("CREATE TABLE effects (x TEXT)", &[])
        .await
        .unwrap();
    tx.execute("INSERT INTO effects VALUES ('kept')", &[])
        .await
        .unwrap();
    let seq = log
        .append(
            Some(&mut tx),
            &Event::new("t", Outcome::Submitted, "committed"),
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(seq, 0, "the rolled-back record left no hole");
    assert_eq!(log.by_trace("committed").await.unwrap().len(), 1);
    assert!(log.verify(None).await.is_ok());
}

#[tokio::test]
async fn the_old_audit_table_moves_into_the_log_and_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE guard_audit (
                audit_id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL,
                tenant TEXT, user_id TEXT, tool TEXT NOT NULL, op TEXT, operation_id TEXT,
                target TEXT, summary TEXT, outcome TEXT NOT NULL, at BIGINT NOT NULL);
             INSERT INTO guard_audit (trace_id, tenant, user_id, tool, op, operation_id, outcome, at)
                VALUES ('t1', 'acme', 'alice', 'prepare_x', 'x', 'op-1', 'PREPARED', 10),
                       ('t2', 'acme', 'alice', 'confirm_x', 'x', 'op-1', 'SUBMITTED', 20);",
        )
        .unwrap();
    }
    let log = AuditLog::new(SqliteStore::open(&path).unwrap(), ORIGIN);
    let records = log.records().await.unwrap();
    let outcomes: Vec<Option<Outcome>> = records
        .iter()
        .map(|r| Outcome::parse(r.json().unwrap()["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [Some(Outcome::Prepared), Some(Outcome::Submitted)]
    );
    assert_eq!(records[1].json().unwrap()["user"], "alice");
    assert_eq!(records[1].json().unwrap()["at"], 20);
    assert!(log.verify(None).await.is_ok());
    let db = rusqlite::Connection::open(&path).unwrap();
    let left: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'guard_audit'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "no second, unverifiable trail remains");
    drop(SqliteStore::open(&path).unwrap());
    assert_eq!(
        log.records().await.unwrap().len(),
        2,
        "a second open moves nothing twice"
    );
}

/// The fault `verify` finds in the stored log, which must not pass (`what` was done to it).
async fn fault_of(log: &AuditLog, what: &str) -> rmcp_guard::audit::Fault {
    match log.verify(None).await {
        Err(rmcp_guard::audit::VerifyError::Fault(fault)) => fault,
        other => panic!("{what}: {other:?}"),
    }
}

#[tokio::test]
async fn an_edited_indexed_column_of_the_store_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let log = sample_log(dir.path(), 4).await;
    let db = rusqlite::Connection::open(dir.path().join("audit.db")).unwrap();
    db.execute(
        "UPDATE guard_audit_log SET outcome = 'declined' WHERE seq = 2",
        [],
    )
    .unwrap();
    let fault = fault_of(&log, "an edited column passed").await;
    assert_eq!((fault.kind, fault.seq), (FaultKind::Modified, 2), "{fault}");
    assert!(fault.detail.contains("outcome"), "{fault}");

    // A fault of the chain after it does not hide it: the earlier fault is named.
    db.execute("DELETE FROM guard_audit_log WHERE seq = 3", [])
        .unwrap();
    let fault = fault_of(&log, "an edited column passed").await;
    assert_eq!((fault.kind, fault.seq), (FaultKind::Modified, 2), "{fault}");
    assert!(fault.detail.contains("outcome"), "{fault}");
    // And a fault of the chain before it is named first.
    db.execute(
        "UPDATE guard_audit_log SET entry = replace(entry, 'alice', 'mallory') WHERE seq = 1",
        [],
    )
    .unwrap();
    let fault = fault_of(&log, "an edited entry passed").await;
    assert_eq!((fault.kind, fault.seq), (FaultKind::Modified, 1), "{fault}");
    assert!(fault.detail.contains("bytes"), "{fault}");
}

#[tokio::test]
async fn a_stored_record_recomputed_with_its_columns_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let log = sample_log(dir.path(), 5).await;
    let records = log.records().await.unwrap();
    let entry = records[2].entry.replace("alice", "mallory");
    let hash = hex(&rmcp_guard::audit::merkle::leaf_hash(entry.as_bytes()));
    let db = rusqlite::Connection::open(dir.path().join("audit.db")).unwrap();
    db.execute(
        "UPDATE guard_audit_log SET entry = ?1, hash = ?2, user_id = 'mallory' WHERE seq = 2",
        rusqlite::params![entry, hash],
    )
    .unwrap();
    let fault = fault_of(&log, "a recomputed record passed").await;
    assert_eq!(
        (fault.kind, fault.seq, fault.position),
        (FaultKind::Modified, 2, 2),
        "{fault}"
    );
}

// ---------------------------------------------------------------------------------------
// Several processes appending to one store. The test binary runs itself as each appender:
// with the child variable set, a run of the test is one appender.

const CHILD_SQLITE: &str = "GUARD_AUDIT_TEST_APPEND_SQLITE";
const CHILD_PG: &str = "GUARD_AUDIT_TEST_APPEND_PG";
const PER_CHILD: usize = 40;
const CHILDREN: usize = 4;

async fn append_as_child(log: &AuditLog, store: &dyn OperationStore) {
    let child: usize = std::env::var("GUARD_AUDIT_TEST_CHILD")
        .unwrap()
        .parse()
        .unwrap();
    for i in 0..PER_CHILD {
        let event = Event::new("append", Outcome::Executed, format!("child-{child}-{i}"))
            .field("child", child as i64)
            .field("i", i as i64);
        if i % 2 == 0 {
            log.append(None, &event).await.expect("append alone");
        } else {
            let mut tx = store.begin().await.expect("begin");
            log.append(Some(&mut tx), &event)
                .await
                .expect("append in tx");
            tx.commit().await.expect("commit");
        }
    }
}

/// Runs `CHILDREN` copies of the test `name` as appenders and waits for all.
fn run_children(name: &str, var: &str, value: &str) {
    let exe = std::env::current_exe().unwrap();
    let name = guard_tests::test_name(module_path!(), name);
    let children: Vec<_> = (0..CHILDREN)
        .map(|k| {
            Command::new(&exe)
                .args(["--exact", &name, "--nocapture", "--test-threads=1"])
                .env(var, value)
                .env("GUARD_AUDIT_TEST_CHILD", k.to_string())
                .spawn()
                .expect("child starts")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "an appender failed");
    }
}

/// One log holding every child's records, each child's in its own order.
async fn assert_one_log(log: &AuditLog) {
    let verified = log.verify(None).await.expect("the log verifies");
    assert_eq!(verified.records, (CHILDREN * PER_CHILD) as u64);
    let records = log.records().await.unwrap();
    for (seq, record) in records.iter().enumerate() {
        assert_eq!(record.seq, seq as u64, "no gap, no fork");
    }
    for child in 0..CHILDREN as i64 {
        let order: Vec<i64> = records
            .iter()
            .filter_map(|r| r.json())
            .filter(|v| v["child"] == child)
            .map(|v| v["i"].as_i64().unwrap())
            .collect();
        assert_eq!(order, (0..PER_CHILD as i64).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn processes_appending_to_one_sqlite_file_keep_one_log() {
    if let Ok(path) = std::env::var(CHILD_SQLITE) {
        let store = SqliteStore::open(&path).expect("child store");
        let log = AuditLog::new(store.clone(), ORIGIN);
        append_as_child(&log, &store).await;
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let store = SqliteStore::open(&path).unwrap();
    run_children(
        "processes_appending_to_one_sqlite_file_keep_one_log",
        CHILD_SQLITE,
        path.to_str().unwrap(),
    );
    assert_one_log(&AuditLog::new(store, ORIGIN)).await;
}

fn pg_store(url: &str, schema: &str) -> PgStore {
    let mut config: tokio_postgres::Config = url.parse().expect("PostgreSQL URL");
    config.options(format!("-c search_path={schema}"));
    PgStore::from_config(config, 4).expect("pool")
}

#[tokio::test(flavor = "multi_thread")]
async fn four_processes_appending_to_one_postgres_keep_one_log() {
    if let Ok(schema) = std::env::var(CHILD_PG) {
        let url = guard_tests::configured_pg_url().expect("the parent had the URL");
        let store = pg_store(&url, &schema);
        let log = AuditLog::new(store.clone(), ORIGIN);
        append_as_child(&log, &store).await;
        return;
    }
    let Some(url) = guard_tests::pg_url("the concurrent audit appenders test") else {
        return;
    };
    let schema = support::orders::fresh_schema("guard_audit_procs");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let store = pg_store(&url, &schema);
    store.migrate().await.expect("migrate");
    let schema_for_children = schema.clone();
    tokio::task::spawn_blocking(move || {
        run_children(
            "four_processes_appending_to_one_postgres_keep_one_log",
            CHILD_PG,
            &schema_for_children,
        )
    })
    .await
    .unwrap();
    assert_one_log(&AuditLog::new(store, ORIGIN)).await;
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
