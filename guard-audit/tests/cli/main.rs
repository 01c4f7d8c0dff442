//! The `guard-audit` binary on a real store, in one test binary: keys, checkpoints, verification
//! that names the first bad record, proofs, export and the story of one call; witnesses and
//! receipts (`witness`); interoperability with an independent implementation (`interop`); a
//! PostgreSQL store (`postgres`).

mod common;
mod copied;
mod export_once;
mod interop;
mod postgres;
mod read_only;
mod witness;

use std::{ffi::OsStr, os::unix::ffi::OsStrExt, path::Path, process::Command};

use common::{append, guard_audit};

#[tokio::test]
async fn keys_checkpoints_verify_prove_export_and_show() {
    let (code, version, _) = guard_audit(&["--version"]);
    assert_eq!(code, 0);
    assert!(version.starts_with("guard-audit 0."), "{version}");

    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let db = at("audit.db");
    append(Path::new(&db), "cli test", 0..6).await;

    let (code, keys, err) = guard_audit(&["keygen", "cli-test"]);
    assert_eq!(code, 0, "{err}");
    let mut keys = keys.lines();
    let (signer, verifier) = (keys.next().unwrap(), keys.next().unwrap());
    assert!(signer.starts_with("PRIVATE+KEY+cli-test+"));
    std::fs::write(at("signer.key"), signer).unwrap();
    std::fs::write(at("verifier.key"), verifier).unwrap();

    let (code, _, err) = guard_audit(&["checkpoint", "--db", &db, "--signer", &at("signer.key")]);
    assert_eq!(code, 2, "the first checkpoint needs the log's name");
    assert!(err.contains("--origin"), "{err}");
    let (code, old, err) = guard_audit(&[
        "checkpoint",
        "--db",
        &db,
        "--signer",
        &at("signer.key"),
        "--origin",
        "cli test",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(old.starts_with("cli test\n"), "{old}");
    assert!(old.contains("\n6\n"), "{old}");
    std::fs::write(at("old.txt"), &old).unwrap();

    let (code, out, err) = guard_audit(&[
        "verify",
        "--db",
        &db,
        "--checkpoint",
        &at("old.txt"),
        "--key",
        &at("verifier.key"),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("OK: 6 records form one chain; the first 6 match"),
        "{out}"
    );
    // Without --checkpoint, the latest one stored is used, and its signature checked.
    let (code, out, _) = guard_audit(&["verify", "--db", &db, "--key", verifier]);
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = guard_audit(&["verify", "--db", &db]);
    assert_eq!(code, 2, "a stored checkpoint needs the key to be trusted");
    assert!(err.contains("--key"), "{err}");

    append(Path::new(&db), "cli test", 6..9).await;
    // Later checkpoints keep the stored name, and another one is refused.
    let (code, _, err) = guard_audit(&[
        "checkpoint",
        "--db",
        &db,
        "--signer",
        &at("signer.key"),
        "--origin",
        "guard audit log",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("named `cli test`"), "{err}");
    let (_, new, _) = guard_audit(&["checkpoint", "--db", &db, "--signer", &at("signer.key")]);
    assert!(new.starts_with("cli test\n9\n"), "{new}");
    std::fs::write(at("new.txt"), &new).unwrap();
    let (code, out, err) = guard_audit(&[
        "prove",
        "--db",
        &db,
        "--from",
        &at("old.txt"),
        "--to",
        &at("new.txt"),
        "--key",
        verifier,
        "--out",
        &at("consistency.txt"),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("extends the one of 6"), "{out}");
    // The proof, checked offline with the two checkpoints alone.
    let check = |from: &str, to: &str, proof: &str| {
        guard_audit(&[
            "verify-proof",
            "--from",
            &at(from),
            "--to",
            &at(to),
            "--consistency",
            &at(proof),
            "--key",
            verifier,
        ])
    };
    let (code, out, err) = check("old.txt", "new.txt", "consistency.txt");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("OK: the checkpoint of 9 records extends the one of 6"),
        "{out}"
    );
    assert_eq!(check("new.txt", "old.txt", "consistency.txt").0, 1);
    let proof = std::fs::read_to_string(at("consistency.txt")).unwrap();
    let first = proof.lines().next().unwrap();
    let changed = proof.replacen(
        first,
        &first.replace(&first[..1], if first.starts_with('A') { "B" } else { "A" }),
        1,
    );
    std::fs::write(at("changed.txt"), changed).unwrap();
    assert_eq!(check("old.txt", "new.txt", "changed.txt").0, 1);
    // The leaf hash and the root a record's inclusion leads to.
    let (code, out, err) = guard_audit(&[
        "prove",
        "--db",
        &db,
        "--trace",
        "trace-4",
        "--checkpoint",
        &at("old.txt"),
        "--key",
        verifier,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("record 4 (trace trace-4) is in the checkpointed log of 6")
            && out.contains("leaf hash ")
            && out.contains("root "),
        "{out}"
    );
    let (code, out, _) = guard_audit(&[
        "verify",
        "--db",
        &db,
        "--inclusion",
        "trace-7",
        "--checkpoint",
        &at("old.txt"),
        "--key",
        verifier,
    ]);
    assert_eq!(
        code, 1,
        "a record after the checkpoint is not under it: {out}"
    );

    let (code, export, _) = guard_audit(&["export", "--db", &db]);
    assert_eq!(code, 0);
    assert_eq!(export.lines().count(), 9);
    std::fs::write(at("log.jsonl"), &export).unwrap();
    let (code, out, _) = guard_audit(&[
        "verify",
        "--file",
        &at("log.jsonl"),
        "--checkpoint",
        &at("new.txt"),
        "--key",
        verifier,
    ]);
    assert_eq!(code, 0, "{out}");
    let (_, one, _) = guard_audit(&["export", "--db", &db, "--trace", "trace-2"]);
    assert_eq!(one.lines().count(), 1);
    assert!(one.contains("\"trace_id\":\"trace-2\""), "{one}");
    let (_, none, _) = guard_audit(&["export", "--db", &db, "--since", "2999-01-01T00:00:00Z"]);
    assert!(none.is_empty(), "{none}");

    let (code, story, _) = guard_audit(&["show", "--db", &db, "trace-3"]);
    assert_eq!(code, 0);
    assert!(
        story.contains("delete_file executed (trace trace-3)"),
        "{story}"
    );
    assert!(
        story.contains("preview: Delete file-3.log (12 bytes)"),
        "{story}"
    );

    // Tampering in the database: the record is named.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE guard_audit_log SET entry = replace(entry, 'file-3.log', 'file-X.log') WHERE seq = 3",
        [],
    )
    .unwrap();
    let (code, out, _) = guard_audit(&[
        "verify",
        "--db",
        &db,
        "--checkpoint",
        &at("new.txt"),
        "--key",
        verifier,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("FAILED: record 3 (position 4) modified"),
        "{out}"
    );
    // The story of a call is still shown from a log that does not verify, under a warning,
    // with exit code 1; the warning says whether the bad record is one of the call's.
    let (code, story, _) = guard_audit(&["show", "--db", &db, "trace-3"]);
    assert_eq!(code, 1, "{story}");
    assert!(
        story.starts_with("!! UNVERIFIED: the log does not verify (record 3 (position 4) modified")
            && story.contains(", at a record of this call;")
            && story.contains("delete_file executed (trace trace-3)"),
        "{story}"
    );
    let (code, story, _) = guard_audit(&["show", "--db", &db, "trace-1"]);
    assert_eq!(code, 1, "{story}");
    assert!(
        story.starts_with("!! UNVERIFIED") && !story.contains("of this call"),
        "{story}"
    );
    conn.execute("DELETE FROM guard_audit_log WHERE seq = 5", [])
        .unwrap();
    let (code, out, _) = guard_audit(&[
        "verify",
        "--file",
        &at("log.jsonl"),
        "--checkpoint",
        &at("new.txt"),
        "--key",
        verifier,
    ]);
    assert_eq!(code, 0, "the export taken before is intact: {out}");
    let mut lines: Vec<&str> = export.lines().collect();
    lines.truncate(7);
    std::fs::write(at("short.jsonl"), lines.join("\n") + "\n").unwrap();
    let (code, out, _) = guard_audit(&[
        "verify",
        "--file",
        &at("short.jsonl"),
        "--checkpoint",
        &at("new.txt"),
        "--key",
        verifier,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("record 7") && out.contains("truncated"),
        "{out}"
    );

    // Another key's checkpoint, and a bad option, are errors that say what to do.
    let (_, other, _) = guard_audit(&["keygen", "cli-test"]);
    let other = other.lines().nth(1).unwrap().to_owned();
    let (code, _, err) = guard_audit(&[
        "verify",
        "--db",
        &db,
        "--checkpoint",
        &at("new.txt"),
        "--key",
        &other,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("not signed by key cli-test"), "{err}");
    let (code, _, err) = guard_audit(&["verify", "--database", &db]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown option --database"), "{err}");
}

/// An argument that is not UTF-8, as a path or as an option's value, is a message and exit
/// code 2, never a panic.
#[test]
fn an_argument_that_is_not_utf8_is_refused_with_a_message() {
    let bad = OsStr::from_bytes(b"audit-\xff.db");
    let key = OsStr::from_bytes(b"\xff");
    let runs: [&[&OsStr]; 3] = [
        &["verify".as_ref(), "--db".as_ref(), bad],
        &[
            "verify".as_ref(),
            "--file".as_ref(),
            bad,
            "--key".as_ref(),
            key,
        ],
        &["keygen".as_ref(), key],
    ];
    for args in runs {
        let out = Command::new(env!("CARGO_BIN_EXE_guard-audit"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("guard-audit: argument ") && err.contains("is not UTF-8 text"),
            "{args:?}: {err}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_guard-audit"))
        .args(["verify".as_ref(), "--db".as_ref(), bad])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(the value of --db)"),
        "{out:?}"
    );
}

/// A receipt proves a record of one log: one signed by the same key for another log fails,
/// whether the log is named with `--origin` or by the store's checkpoints.
#[tokio::test]
async fn a_receipt_of_another_log_signed_by_the_same_key_fails() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (_, keys, _) = guard_audit(&["keygen", "shared"]);
    let mut keys = keys.lines();
    std::fs::write(at("signer.key"), keys.next().unwrap()).unwrap();
    let verifier = keys.next().unwrap().to_owned();
    for (db, origin) in [("a.db", "log a"), ("b.db", "log b")] {
        append(Path::new(&at(db)), origin, 0..3).await;
        let (code, _, err) = guard_audit(&[
            "checkpoint",
            "--db",
            &at(db),
            "--signer",
            &at("signer.key"),
            "--origin",
            origin,
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = guard_audit(&[
        "receipt",
        "--db",
        &at("b.db"),
        "trace-1",
        "--key",
        &verifier,
        "--out",
        &at("b.proof"),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let check = |origin: &str| {
        guard_audit(&[
            "verify-proof",
            "--proof",
            &at("b.proof"),
            "--key",
            &verifier,
            "--origin",
            origin,
        ])
    };
    let (code, out, err) = check("log b");
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = check("log a");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("is of the log `log b`, not `log a`"), "{out}");
    // Unnamed, a receipt is not checked at all.
    let (code, _, err) = guard_audit(&[
        "verify-proof",
        "--proof",
        &at("b.proof"),
        "--key",
        &verifier,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--origin is required"), "{err}");
    // A store's receipt is checked as a record of the store's own log.
    let (code, out, err) = guard_audit(&[
        "receipt",
        "--db",
        &at("b.db"),
        "trace-1",
        "--key",
        &verifier,
        "--origin",
        "log a",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("is of the log `log b`, not `log a`"), "{out}");
}
