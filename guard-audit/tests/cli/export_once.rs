//! An export is read once: verified through a pipe (`--file /dev/stdin`) and a FIFO with the
//! log's key, which checks it twice over (the chain, then every checkpoint), it is the same
//! genuine log as from a plain file, and nothing waits for a second read.

use std::{path::Path, process::Command};

use crate::common::{append, guard_audit, guard_audit_fed};

/// `verify --file FILE --key KEY --checkpoint CHECKPOINT`.
fn verify<'a>(file: &'a str, key: &'a str, checkpoint: &'a str) -> [&'a str; 7] {
    [
        "verify",
        "--file",
        file,
        "--key",
        key,
        "--checkpoint",
        checkpoint,
    ]
}

#[tokio::test]
async fn an_export_verifies_from_a_pipe_and_a_fifo_as_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let db = at("audit.db");
    append(Path::new(&db), "piped log", 0..5).await;
    let (_, keys, _) = guard_audit(&["keygen", "piped"]);
    let mut keys = keys.lines();
    std::fs::write(at("signer.key"), keys.next().unwrap()).unwrap();
    let verifier = keys.next().unwrap().to_owned();
    let (code, note, err) = guard_audit(&[
        "checkpoint",
        "--db",
        &db,
        "--signer",
        &at("signer.key"),
        "--origin",
        "piped log",
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(at("checkpoint.txt"), note).unwrap();
    let (code, export, err) = guard_audit(&["export", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(at("export.jsonl"), &export).unwrap();

    let checkpoint = at("checkpoint.txt");
    let exported = at("export.jsonl");
    let (code, out, err) = guard_audit(&verify(&exported, &verifier, &checkpoint));
    assert_eq!(code, 0, "from a file: {out}{err}");
    assert!(out.starts_with("OK: 5 records form one chain"), "{out}");

    let piped = |args: &[&str]| {
        guard_audit_fed(args, export.as_bytes())
            .unwrap_or_else(|| panic!("{args:?} hung reading its input"))
    };
    let (code, out, err) = piped(&verify("/dev/stdin", &verifier, &checkpoint));
    assert_eq!(code, 0, "through a pipe: {out}{err}");
    assert!(out.starts_with("OK: 5 records form one chain"), "{out}");
    let (code, out, err) = piped(&[
        "prove",
        "--file",
        "/dev/stdin",
        "--trace",
        "trace-3",
        "--checkpoint",
        &checkpoint,
        "--key",
        &verifier,
    ]);
    assert_eq!(code, 0, "a proof through a pipe: {out}{err}");
    assert!(out.contains("record 3 (trace trace-3)"), "{out}");

    let fifo = at("export.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo makes the FIFO");
    let writer = {
        let (fifo, export) = (fifo.clone(), export.clone());
        // Opening a FIFO to write waits for its reader; one writer, so one read's worth.
        std::thread::spawn(move || {
            let _ = std::fs::write(&fifo, export);
        })
    };
    let (code, out, err) = guard_audit_fed(&verify(&fifo, &verifier, &checkpoint), b"")
        .expect("verify hung on the FIFO, waiting for a second read");
    assert_eq!(code, 0, "through a FIFO: {out}{err}");
    assert!(out.starts_with("OK: 5 records form one chain"), "{out}");
    writer.join().unwrap();
}
