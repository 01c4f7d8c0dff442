//! What a new user copies from the README works as written.
//!
//! - The `.mcp.json` recipes (`examples/mcp.json`, shown in the README) run through the MCP
//!   Inspector CLI exactly as a client runs them: the installed binaries found on `PATH`, a
//!   fresh home directory, the client in an unrelated working directory. The tools are
//!   listed and callable, the databases and allowlists land in the per-user directories, and
//!   nothing lands in the client's directory.
//! - The README's install lines and `examples/minimal` build in a fresh crate of its own.
//! - Every binary answers `--version`.
//!
//! The Inspector CLI and the Node.js 22 it needs are installed by
//! `scripts/inspector-deps.sh`; without npm the test fails, it never passes by skipping.

use crate::support::external;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use external::{example_bin, show, workspace_root};
use serde_json::Value;

fn run(what: &str, command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(output.status.success(), "{}", show(what, &output));
    output
}

/// Installs the Inspector CLI once per test process: two npm installs into one folder at
/// once break each other.
fn install_inspector(root: &Path) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        run(
            "scripts/inspector-deps.sh (needs npm with the registry reachable)",
            Command::new("bash").arg(root.join("scripts/inspector-deps.sh")),
        );
    });
}

/// A user's machine: `bin/` on `PATH` holding the installed servers, an empty `home/`, and
/// the directory the client starts servers from.
struct Machine {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    home: PathBuf,
    client: PathBuf,
}

impl Machine {
    fn new(root: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (bin, home, client) = (
            dir.path().join("bin"),
            dir.path().join("home"),
            dir.path().join("client"),
        );
        for d in [&bin, &home, &client] {
            std::fs::create_dir_all(d).unwrap();
        }
        // Inspector CLI 1.0.3 picks the package.json naming its client by testing
        // `../package.json` against its working directory, then imports it relative to its
        // own file; a package.json above the working directory makes it take its own.
        std::fs::write(dir.path().join("package.json"), "{}\n").unwrap();
        // `cargo install` copies the binary into a directory on PATH; so does this.
        for package in ["safe-ops", "order-cancel"] {
            let built = example_bin(root, package, "NO_SUCH_OVERRIDE");
            std::fs::copy(&built, bin.join(package)).unwrap();
        }
        Self {
            _dir: dir,
            bin,
            home,
            client,
        }
    }

    /// The Inspector CLI on `server` of `examples/mcp.json`, with `extra` arguments.
    fn inspect(&self, root: &Path, server: &str, extra: &[&str]) -> Value {
        let inspector = root.join("tests/inspector/node_modules");
        let node_bin = inspector.join(".bin");
        let path = format!(
            "{}:{}:/usr/bin:/bin",
            self.bin.display(),
            node_bin.display()
        );
        let what = format!("the Inspector CLI on {server} {extra:?}");
        let output = run(
            &what,
            Command::new(node_bin.join("node"))
                .arg(inspector.join("@modelcontextprotocol/inspector-cli/build/cli.js"))
                .args(["--cli", "--config"])
                .arg(root.join("examples/mcp.json"))
                .args(["--server", server])
                .args(extra)
                .current_dir(&self.client)
                .env_clear()
                .env("PATH", path)
                .env("HOME", &self.home),
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let json = stdout
            .find('{')
            .unwrap_or_else(|| panic!("{}", show(&what, &output)));
        serde_json::from_str(&stdout[json..])
            .unwrap_or_else(|e| panic!("{what} printed no JSON ({e})\n{}", show(&what, &output)))
    }
}

fn tool_names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
        .to_owned()
}

#[test]
fn the_mcp_json_recipes_run_installed_servers_with_per_user_files() {
    let root = workspace_root();
    install_inspector(&root);
    let machine = Machine::new(&root);

    let tools = machine.inspect(&root, "safe-ops", &["--method", "tools/list"]);
    assert_eq!(
        tool_names(&tools),
        [
            "create_download_link",
            "delete_file",
            "delete_files",
            "deploy",
            "deploy_production",
            "drop_table",
            "list_tables",
            "read_build_log",
            "undo"
        ]
    );
    let listed = machine.inspect(
        &root,
        "safe-ops",
        &["--method", "tools/call", "--tool-name", "list_tables"],
    );
    assert!(text_of(&listed).contains("orders: 4 rows"), "{listed}");

    let tools = machine.inspect(&root, "order-cancel", &["--method", "tools/list"]);
    assert_eq!(
        tool_names(&tools),
        [
            "confirm_order_cancel",
            "get_operation_result",
            "open_ticket",
            "prepare_order_cancel"
        ]
    );
    // The recipe's identity reached the server: alice may prepare a cancellation.
    let prepared = machine.inspect(
        &root,
        "order-cancel",
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "prepare_order_cancel",
            "--tool-arg",
            "order_no=A10001",
            "reason=ordered twice",
        ],
    );
    assert_eq!(
        prepared["structuredContent"]["status"], "PREPARED",
        "{prepared}"
    );

    // Files went to the per-user directories, the shipped allowlists whole, and nothing to the
    // client's working directory.
    let data = machine.home.join(".local/share");
    let config = machine.home.join(".config");
    assert!(data.join("safe-ops/safe-ops.db").is_file());
    assert!(data.join("safe-ops/files").is_dir());
    assert!(data.join("order-cancel/orders.db").is_file());
    for app in ["safe-ops", "order-cancel"] {
        assert_eq!(
            std::fs::read_to_string(config.join(app).join("allowlist.toml")).unwrap(),
            std::fs::read_to_string(root.join("examples").join(app).join("allowlist.toml"))
                .unwrap(),
            "{app}'s shipped allowlist is installed as it ships"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&machine.client).unwrap().collect();
    assert!(
        left.is_empty(),
        "the client's directory stays empty: {left:?}"
    );
}

#[test]
fn an_edited_allowlist_is_kept_across_starts() {
    let root = workspace_root();
    install_inspector(&root);
    let machine = Machine::new(&root);
    let list = machine.home.join(".config/safe-ops/allowlist.toml");
    std::fs::create_dir_all(list.parent().unwrap()).unwrap();
    std::fs::write(&list, "tools = [\"list_tables\"]\n").unwrap();
    let tools = machine.inspect(&root, "safe-ops", &["--method", "tools/list"]);
    assert_eq!(tool_names(&tools), ["list_tables"]);
    assert_eq!(
        std::fs::read_to_string(&list).unwrap(),
        "tools = [\"list_tables\"]\n"
    );
}

#[test]
fn the_recipes_in_the_readme_are_the_tested_file() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let recipes = std::fs::read_to_string(root.join("examples/mcp.json")).unwrap();
    assert!(
        readme.contains(&format!("```json\n{recipes}```")),
        "the README shows examples/mcp.json verbatim"
    );
    assert!(
        !recipes.contains("cargo"),
        "recipes start installed binaries"
    );
    let minimal = std::fs::read_to_string(root.join("examples/minimal/src/main.rs")).unwrap();
    assert!(
        readme.contains(&format!("```rust\n{minimal}```")),
        "the README shows examples/minimal/src/main.rs verbatim"
    );
}

#[test]
fn every_binary_answers_version() {
    let root = workspace_root();
    for package in ["safe-ops", "order-cancel", "incident-lab", "minimal"] {
        let bin = example_bin(&root, package, "NO_SUCH_OVERRIDE");
        let output = run(
            &format!("{package} --version"),
            Command::new(bin).arg("--version"),
        );
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("{package} {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

/// The README's `[dependencies]` block, as a user would paste it.
fn install_lines(readme: &str) -> &str {
    let section = &readme[readme.find("## Install").expect("an Install section")..];
    let start = section.find("```toml\n").expect("a toml block") + "```toml\n".len();
    &section[start..start + section[start..].find("```").unwrap()]
}

#[test]
fn the_readme_install_lines_build_the_minimal_server_in_a_fresh_crate() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = install_lines(&readme);
    assert!(
        lines.starts_with("[dependencies]\nrmcp-guard = \"0.1\"\n"),
        "{lines}"
    );

    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("fresh");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    // The lines as written; only where rmcp-guard comes from is redirected to this checkout,
    // since the test cannot publish it first.
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fresh\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n{lines}\n\
             [patch.crates-io]\nrmcp-guard = {{ path = {:?} }}\nrmcp-guard-macros = {{ path = {:?} }}\n\n[workspace]\n",
            root.join("guard-runtime"),
            root.join("guard-macros"),
        ),
    )
    .unwrap();
    std::fs::copy(
        root.join("examples/minimal/src/main.rs"),
        krate.join("src/main.rs"),
    )
    .unwrap();
    // The versions this workspace tested, so the build reuses its artifacts.
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .expect("the test runs from <target>/<profile>/deps");
    run(
        "cargo build in a fresh crate with the README's install lines",
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--offline", "--quiet"])
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", target),
    );
}
