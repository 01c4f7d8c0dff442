//! safe-ops and order-cancel against a real third-party client: the official Python MCP SDK.
//!
//! Prepares `.venv` with `scripts/python-venv.sh`, makes sure both binaries exist,
//! then runs `tests/python` with pytest. The Python tests cover the push elicitation path
//! (protocol 2025-11-25, low-level `ClientSession`) and the multi-round-trip path
//! (protocol 2026-07-28, high-level `Client`). Without Python the test fails: it never
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

/// `$env_var` if set; else the `package` binary beside this test's target directory, built
/// first with `cargo build -p <package>` (a no-op when it is up to date), so the Python client
/// never talks to a stale server.
fn example_bin(root: &Path, package: &str, env_var: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env_var) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{env_var}={} does not name a file",
            path.display()
        );
        return path;
    }
    // This test runs from <target>/<profile>/deps/; the binary lives in <target>/<profile>/.
    let profile_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| root.join("target").join("debug"));
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build
        .current_dir(root)
        .args(["build", "--quiet", "-p", package]);
    if profile_dir
        .file_name()
        .is_some_and(|name| name == "release")
    {
        build.arg("--release");
    }
    if let Some(target_dir) = profile_dir.parent() {
        build.env("CARGO_TARGET_DIR", target_dir);
    }
    let built = build
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {package}: {e}"));
    assert!(
        built.status.success(),
        "{}",
        show(&format!("cargo build -p {package}"), &built)
    );
    let bin = profile_dir.join(format!("{package}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "cargo built {package} but {} is missing",
        bin.display()
    );
    bin
}

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
