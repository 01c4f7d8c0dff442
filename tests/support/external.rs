//! Shared by the third-party client tests: the workspace root, the example binaries the
//! clients drive, and a readable report of a child process.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent directory")
        .to_path_buf()
}

pub fn show(what: &str, output: &Output) -> String {
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
pub fn example_bin(root: &Path, package: &str, env_var: &str) -> PathBuf {
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
