//! The README's first command, `cargo run -p safe-ops -- demo`: the binary plays every scene
//! on both protocol eras (undoing a delete and a drop, restarting between two approvals),
//! finds no undo window due to purge (so the last drop is still undone), opens the download
//! link the human accepted, and ends by verifying its own audit log against the checkpoint
//! it signed. Run twice in one directory,
//! as a user re-running the quickstart would: the demo recreates its workspace, so the second
//! run tells the same story.

use std::process::Command;

use crate::support::external::{example_bin, workspace_root};

fn run_demo(cwd: &std::path::Path) -> String {
    run_demo_of("safe-ops", "SAFE_OPS_BIN", cwd)
}

/// `cargo run -p PACKAGE -- demo` in `cwd`, with the user's directories there too; its stdout.
fn run_demo_of(package: &str, env_var: &str, cwd: &std::path::Path) -> String {
    let output = Command::new(example_bin(&workspace_root(), package, env_var))
        .arg("demo")
        .current_dir(cwd)
        // The user's own allowlist and data must not decide what the demo shows.
        .env("XDG_CONFIG_HOME", cwd.join("config"))
        .env("XDG_DATA_HOME", cwd.join("data"))
        .env_remove("GUARD_ALLOWLIST")
        .output()
        .unwrap_or_else(|e| panic!("{package} demo does not run: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{package} demo failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_demo_plays_both_eras_and_verifies_its_own_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let first = run_demo(dir.path());
    for heading in [
        "══ Protocol 2025-11-25: push elicitation (elicitation/create) ══",
        "══ Protocol 2026-07-28: MRTR (InputRequiredResult + sealed requestState) ══",
        "══ Audit ══",
    ] {
        assert!(first.contains(heading), "no `{heading}` in:\n{first}");
    }
    assert_eq!(
        first
            .matches("── deploy_production · two people approve on the approval page")
            .count(),
        2,
        "the page approval plays on both eras:\n{first}"
    );
    assert!(
        first.contains("── delete_files · batch:"),
        "no batch scene:\n{first}"
    );
    // Undo on both eras; a purge pass before the windows close finds none due, and the
    // last drop is still undone after it.
    assert_eq!(
        first
            .matches("── undo · the delete, within its window")
            .count(),
        2,
        "{first}"
    );
    for line in [
        "── undo · the drop, within its window: every row comes back",
        "   changed       table orders (4 rows) back; waiting in the trash: 1 → 0",
        "Already undone at ",
        "   purge         0 windows due: the 2 waiting in the trash can be undone until 10 minutes after their effect",
        "── undo · after the purge pass: its window is still open",
        "   changed       table customers (3 rows) back; waiting in the trash: 2 → 1",
    ] {
        assert!(first.contains(line), "no `{line}` in:\n{first}");
    }
    // On 2026-07-28 the server restarts between the two approvals, and the deploy runs once.
    let restart = first
        .find("   restart       safe-ops stops with the approval pending (1 of 2)")
        .unwrap_or_else(|| panic!("no restart in:\n{first}"));
    let after_restart = &first[restart..];
    for line in [
        "   carol         opens the link delivered to carol, delivered before the restart",
        "   page shows    Approvals: 2 of 2",
        "   model calls   deploy_production({\"service\":\"billing\"}) again, on the restarted server",
        "   model sees    Deployment of billing to production submitted",
        "   changed       table deployments: 3 → 4 rows",
    ] {
        assert!(
            after_restart.contains(line),
            "no `{line}` after the restart:\n{after_restart}"
        );
    }
    // A grant over logs/: five deletes unasked, then asked again once used up, and again
    // after the second grant is revoked.
    let grants = first
        .find("══ A grant instead of a question per file ══")
        .map(|at| &first[at..])
        .unwrap_or_else(|| panic!("no grant section in:\n{first}"));
    assert_eq!(
        grants
            .matches("   human sees    nothing (guard did not ask)")
            .count(),
        5,
        "{grants}"
    );
    assert_eq!(
        grants.matches("Nobody was asked: grant g-").count(),
        5,
        "{grants}"
    );
    for line in [
        "   or may choose This and up to 5 more calls of delete_file on files directly in folder logs/, for 10 minutes, without asking again",
        "0 left) covered this call",
        "── delete_file · the grant is used up: asked again, and granted again",
        "it covers no call from now on (0 of 5 used)",
        "── delete_file · after the revocation: asked again, and declined",
        "   model sees    The user declined; nothing was deleted.",
    ] {
        assert!(grants.contains(line), "no `{line}` in:\n{grants}");
    }
    // A download link: asked for, opened over HTTP, refused once altered.
    let download = first
        .find("══ A download link: a capability, asked for ══")
        .map(|at| &first[at..])
        .unwrap_or_else(|| panic!("no download link section in:\n{first}"));
    for line in [
        "   human sees    Show the agent a download link, valid for 5 minutes, that lets whoever holds it download, without asking anyone, the 16 bytes of file report.csv: 1 link.",
        "   model sees    Download link to report.csv (16 bytes), valid for 5 minutes, until ",
        "/download/report.csv?expires=",
        "   link opens    HTTP 200: \"id,total\\n1,1999\\n\"",
        "   altered link  HTTP 403: This download link is not valid: its signature does not match.",
    ] {
        assert!(download.contains(line), "no `{line}` in:\n{download}");
    }
    let last = first.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("OK: ") && last.contains("match the signed checkpoint"),
        "the demo does not end with a verified log: {last}"
    );
    let second = run_demo(dir.path());
    assert_eq!(
        second.lines().last(),
        Some(last),
        "a second run starts afresh and verifies the same-sized log"
    );
}

/// `cargo run -p order-cancel -- demo`: the story of prepares, confirms and refusals ends with
/// its log witnessed and verified against the witness's checkpoint, its keys kept under the
/// user's configuration directory (owner-only), none beside the database.
#[test]
fn the_order_cancel_demo_verifies_its_log_against_its_witness() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let stdout = run_demo_of("order-cancel", "ORDER_CANCEL_BIN", dir.path());
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("OK: ") && last.contains("cosigned by local-witness"),
        "the demo does not end with a witnessed log: {last}"
    );
    let keys = dir.path().join("config/order-cancel/audit");
    for key in ["log.key", "witness.key"] {
        let mode = std::fs::metadata(keys.join(key))
            .unwrap_or_else(|e| panic!("{key} under the configuration directory: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{key}");
    }
    let workspace = dir.path().join(".order-cancel/demo");
    let beside: Vec<_> = std::fs::read_dir(&workspace)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("key"))
        .collect();
    assert!(beside.is_empty(), "keys beside the database: {beside:?}");
}
