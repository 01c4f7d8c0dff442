//! safe-ops and order-cancel against a second third-party client: the official TypeScript
//! MCP SDK from npm (protocol 2025-11-25).
//!
//! Installs the pinned SDK into `tests/node/node_modules` with `scripts/node-deps.sh`, makes
//! sure both binaries exist, then runs `node --test tests/node`. Without Node the test fails:
//! it never passes by skipping.

use crate::support::external;

use std::{
    path::Path,
    process::{Command, Output},
};

use external::{example_bin, show, workspace_root};

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
    let safe_ops = example_bin(&root, "safe-ops", "SAFE_OPS_BIN");
    let order_cancel = example_bin(&root, "order-cancel", "ORDER_CANCEL_BIN");
    let tests = run(
        &root,
        "node --test tests/node",
        Command::new("node")
            .args(["--test", "tests/node/"])
            .env("SAFE_OPS_BIN", &safe_ops)
            .env("ORDER_CANCEL_BIN", &order_cancel),
    );
    let report = show("node --test tests/node", &tests);
    println!("{report}");
    let stdout = String::from_utf8_lossy(&tests.stdout);
    assert!(
        stdout.contains("# fail 0") && !stdout.contains("# pass 0"),
        "the client tests ran and passed\n{report}"
    );
}
