//! A store copied with its write-ahead log but not its `-shm` index (as a backup or a
//! hand copy leaves it) is read in full, the log's entries included, and nothing is created
//! beside it.

use std::path::Path;

use crate::common::{append, guard_audit};

/// The names and sizes of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn a_copy_with_its_wal_and_no_index_is_read_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    append(&db, "copied log", 0..3).await;
    // A connection held open keeps the next records in the write-ahead log.
    let holder = rusqlite::Connection::open(&db).unwrap();
    let _: i64 = holder
        .query_row("SELECT COUNT(*) FROM guard_audit_log", [], |r| r.get(0))
        .unwrap();
    append(&db, "copied log", 3..7).await;
    let copied = tempfile::tempdir().unwrap();
    let copy = copied.path().join("audit.db");
    std::fs::copy(&db, &copy).unwrap();
    std::fs::copy(
        dir.path().join("audit.db-wal"),
        copied.path().join("audit.db-wal"),
    )
    .unwrap();
    drop(holder);
    let before = listing(copied.path());
    assert!(
        before
            .iter()
            .any(|(name, len)| name == "audit.db-wal" && *len > 0),
        "the copy's write-ahead log holds entries: {before:?}"
    );

    let (code, out, err) = guard_audit(&["verify", "--db", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("OK: 7 records form one chain"), "{out}");
    assert_eq!(
        listing(copied.path()),
        before,
        "verify created or changed a file"
    );
}
