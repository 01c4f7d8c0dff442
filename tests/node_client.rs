//! safe-ops and order-cancel against a second third-party client: the official TypeScript
//! MCP SDK from npm (protocol 2025-11-25).
//!
//! Installs the pinned SDK into `tests/node/node_modules` with `scripts/node-deps.sh`, builds
//! both binaries, then runs `node --test tests/node`. Without Node the test fails: it never
//! passes by skipping.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent directory")
        .to_path_buf()
}

fn show(what: &str, output: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn run(root: &Path, what: &str, command: &mut Command) -> Output {
    let output = command
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(output.status.success(), "{}", show(what, &output));
    output
}

#[test]
fn typescript_sdk_client_drives_the_examples_over_stdio() {
    let root = workspace_root();
    run(
        &root,
        "scripts/node-deps.sh (needs Node.js 18+ and npm with the registry reachable)",
        Command::new("bash").arg(root.join("scripts/node-deps.sh")),
    );
    run(
        &root,
        "cargo build -p safe-ops -p order-cancel",
        Command::new(env!("CARGO")).args(["build", "-q", "-p", "safe-ops", "-p", "order-cancel"]),
    );
    let bin = |name: &str| root.join("target/debug").join(name);
    let tests = run(
        &root,
        "node --test tests/node",
        Command::new("node")
            .args(["--test", "tests/node/"])
            .env("SAFE_OPS_BIN", bin("safe-ops"))
            .env("ORDER_CANCEL_BIN", bin("order-cancel")),
    );
    let report = show("node --test tests/node", &tests);
    println!("{report}");
    let stdout = String::from_utf8_lossy(&tests.stdout);
    assert!(
        stdout.contains("# fail 0") && !stdout.contains("# pass 0"),
        "the client tests ran and passed\n{report}"
    );
}
