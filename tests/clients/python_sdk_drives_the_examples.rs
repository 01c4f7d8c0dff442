//! safe-ops and order-cancel against a real third-party client: the official Python MCP SDK.
//!
//! Prepares `.venv` with `scripts/python-venv.sh`, makes sure both binaries exist,
//! then runs `tests/python` with pytest. The Python tests cover the push elicitation path
//! (protocol 2025-11-25, low-level `ClientSession`) and the multi-round-trip path
//! (protocol 2026-07-28, high-level `Client`), and on both, a production deploy approved on
//! safe-ops' page by two people whose links the client never sees (`test_safe_ops_approval`).
//! Without Python the test fails: it never passes by skipping.

use crate::support::external;

use std::process::Command;

use external::{example_bin, show, workspace_root};

#[test]
fn python_sdk_client_drives_the_examples_over_stdio() {
    let root = workspace_root();

    let venv = Command::new("bash")
        .arg(root.join("scripts/python-venv.sh"))
        .current_dir(&root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run scripts/python-venv.sh: {e}"));
    assert!(
        venv.status.success(),
        "the Python client tests need python3 with venv and pip (PyPI reachable)\n{}",
        show("scripts/python-venv.sh", &venv)
    );
    let python = root.join(".venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing after scripts/python-venv.sh",
        python.display()
    );

    let safe_ops = example_bin(&root, "safe-ops", "SAFE_OPS_BIN");
    let order_cancel = example_bin(&root, "order-cancel", "ORDER_CANCEL_BIN");
    let pytest = Command::new(&python)
        .args(["-m", "pytest", "tests/python", "-q", "-rxXs"])
        .current_dir(&root)
        .env("SAFE_OPS_BIN", &safe_ops)
        .env("ORDER_CANCEL_BIN", &order_cancel)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let report = show("pytest tests/python", &pytest);
    println!("{report}");
    assert!(pytest.status.success(), "{report}");
    let stdout = String::from_utf8_lossy(&pytest.stdout);
    assert!(stdout.contains(" passed"), "pytest ran no test\n{report}");
}
