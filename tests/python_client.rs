//! safe-ops against a real third-party client: the official Python MCP SDK.
//!
//! Prepares `.venv` with `scripts/python-venv.sh`, makes sure the `safe-ops` binary exists,
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

/// `SAFE_OPS_BIN` if set; else the `safe-ops` binary beside this test's target directory,
/// built first with `cargo build -p safe-ops` (a no-op when it is up to date), so the
/// Python client never talks to a stale server.
fn safe_ops_bin(root: &Path) -> PathBuf {
    if let Some(path) = std::env::var_os("SAFE_OPS_BIN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "SAFE_OPS_BIN={} does not name a file",
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
        .args(["build", "--quiet", "-p", "safe-ops"]);
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
        .unwrap_or_else(|e| panic!("cannot run cargo to build safe-ops: {e}"));
    assert!(
        built.status.success(),
        "{}",
        show("cargo build -p safe-ops", &built)
    );
    let bin = profile_dir.join(format!("safe-ops{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "cargo built safe-ops but {} is missing",
        bin.display()
    );
    bin
}

#[test]
fn python_sdk_client_drives_safe_ops_over_stdio() {
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

    let bin = safe_ops_bin(&root);
    let pytest = Command::new(&python)
        .args(["-m", "pytest", "tests/python", "-q", "-rxXs"])
        .current_dir(&root)
        .env("SAFE_OPS_BIN", &bin)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let report = show("pytest tests/python", &pytest);
    println!("{report}");
    assert!(pytest.status.success(), "{report}");
    let stdout = String::from_utf8_lossy(&pytest.stdout);
    assert!(stdout.contains(" passed"), "pytest ran no test\n{report}");
}
