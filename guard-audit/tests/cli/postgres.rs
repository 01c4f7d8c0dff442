//! `guard-audit --pg`: a PostgreSQL store is read in `READ ONLY` transactions (an entry still
//! queued is reported as pending and left queued), and `checkpoint` places what is queued,
//! as the server's sequencer would, before it signs. Runs with `GUARD_TEST_PG_URL`; without
//! it the test says it was skipped, and under `CI` it fails instead.

use rmcp_guard::{
    audit::{AuditLog, CheckpointSigner, Event},
    ops::PgStore,
    outcome::Outcome,
};

use crate::common::guard_audit;

/// The database to create a schema in, if the run has one.
fn pg_url() -> Option<String> {
    match std::env::var("GUARD_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => panic!(
            "guard-audit's PostgreSQL test did not run, and CI is set, so this fails rather than \
             pass by skipping: set GUARD_TEST_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test)"
        ),
        _ => {
            eprintln!(
                "SKIPPED: GUARD_TEST_PG_URL is not set, so guard-audit's PostgreSQL test did not \
                 run. Set it (e.g. GUARD_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/test)."
            );
            None
        }
    }
}

#[tokio::test]
async fn a_postgres_store_is_read_only_and_checkpointed_after_its_queue() {
    let Some(url) = pg_url() else {
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let schema = format!("guard_audit_cli_{}_{nanos}", std::process::id());
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let separator = if url.contains('?') { '&' } else { '?' };
    let store_url = format!("{url}{separator}options=-c%20search_path%3D{schema}");

    let store = PgStore::connect(&store_url, 1).unwrap();
    store.migrate().await.unwrap();
    let log = AuditLog::new(store, "pg cli test");
    for i in 0..3 {
        let event = Event::new("delete_file", Outcome::Executed, format!("trace-{i}"))
            .identity("acme", "alice")
            .field("target", format!("file-{i}.log"));
        log.append(None, &event).await.unwrap();
    }
    admin
        .batch_execute(&format!(
            "INSERT INTO {schema}.guard_audit_queue (body, trace_id, tool, outcome, at) VALUES
             ('{{\"at\":5,\"outcome\":\"SUBMITTED\",\"tool\":\"confirm_x\",\"trace_id\":\"waiting\"}}',
              'waiting', 'confirm_x', 'SUBMITTED', 5)"
        ))
        .await
        .unwrap();

    let (code, out, err) = guard_audit(&["verify", "--pg", &store_url]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("OK: 3 records"), "{out}");
    assert!(
        out.contains("pending: 1 entry committed and not yet sequenced"),
        "{out}"
    );
    let (code, out, err) = guard_audit(&["show", "trace-1", "--pg", &store_url]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.is_empty(), "the call's story is told");

    let dir = tempfile::tempdir().unwrap();
    let signer = CheckpointSigner::generate("pg-cli-test").unwrap();
    let (signer_file, key_file) = (dir.path().join("signer.key"), dir.path().join("key"));
    std::fs::write(&signer_file, signer.to_text()).unwrap();
    std::fs::write(&key_file, signer.verifier().to_text()).unwrap();
    let (code, note, err) = guard_audit(&[
        "checkpoint",
        "--pg",
        &store_url,
        "--signer",
        signer_file.to_str().unwrap(),
        "--origin",
        "pg cli test",
    ]);
    assert_eq!(code, 0, "{note}{err}");
    assert!(
        note.starts_with("pg cli test\n4\n"),
        "the queued entry was placed before signing: {note}"
    );
    let queued: i64 = admin
        .query_one(
            &format!("SELECT COUNT(*) FROM {schema}.guard_audit_queue"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(queued, 0, "checkpoint emptied the queue");

    let (code, out, err) = guard_audit(&[
        "verify",
        "--pg",
        &store_url,
        "--key",
        key_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("OK: 4 records"), "{out}");
    assert!(!out.contains("pending"), "{out}");

    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
