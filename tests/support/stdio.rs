//! safe-ops as a child process on stdio, spoken to line by line in JSON-RPC (protocol
//! 2025-11-25), for tests of the binary's flags, environment, signals and log.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// The safe-ops binary (`SAFE_OPS_BIN`, or built once per test process in this test's own
/// target directory).
pub fn safe_ops_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        super::external::example_bin(
            &super::external::workspace_root(),
            "safe-ops",
            "SAFE_OPS_BIN",
        )
    })
    .clone()
}

/// The safe-ops binary on stdio, spoken to line by line in JSON-RPC (protocol 2025-11-25).
pub struct StdioServer {
    child: Child,
    /// `None` once [`StdioServer::stop`] closed it.
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    notifications: Vec<Value>,
    next_id: u64,
    stderr: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl StdioServer {
    /// Starts safe-ops in a fresh directory with a seeded database, with `args` and `env`
    /// (GUARD_* unset unless given), and initializes the session.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        // The database exists, as after a first start: read-only mode never creates one.
        drop(safe_ops::db::open(&dir.path().join("ops.db")).expect("seeded database"));
        let mut server = Self::start_in(dir.path(), args, env);
        server._dir = Some(dir);
        server
    }

    /// Like [`StdioServer::start`], with the sandbox (`files/`), database (`ops.db`) and log
    /// (`stderr.log`) in `dir`, which the caller keeps.
    pub fn start_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_declaring(dir, args, env, json!({}))
    }

    /// Like [`StdioServer::start_in`], the client declaring `capabilities`.
    pub fn start_declaring(
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        capabilities: Value,
    ) -> Self {
        // The sandbox exists, as after a first start: read-only mode never creates one.
        std::fs::create_dir_all(dir.join("files")).expect("sandbox root");
        let stderr = dir.join("stderr.log");
        let mut command = Command::new(safe_ops_bin());
        command
            .arg("--root")
            .arg(dir.join("files"))
            .arg("--db")
            .arg(dir.join("ops.db"))
            .args(args)
            .env_remove("GUARD_ALLOWLIST")
            .env_remove("GUARD_READ_ONLY")
            // The default allowlist and audit log are the user's: this test's, not the
            // machine's.
            .env("XDG_CONFIG_HOME", dir)
            .env("XDG_DATA_HOME", dir)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("safe-ops starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && tx.send(value).is_err()
                {
                    break;
                }
            }
        });
        let mut server = Self {
            child,
            stdin: Some(stdin),
            lines,
            notifications: Vec::new(),
            next_id: 1,
            stderr,
            _dir: None,
        };
        server
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "clientInfo": {"name": "exposure-test", "version": "1"}
                }),
            )
            .expect("initialize succeeds");
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("the server was stopped");
        writeln!(stdin, "{message}").expect("write to safe-ops");
        stdin.flush().unwrap();
    }

    pub fn recv(&mut self, until: Instant, what: &str) -> Value {
        let left = until.saturating_duration_since(Instant::now());
        self.lines
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("safe-ops sent nothing for {what}: {e}"))
    }

    /// Sends a request and returns its `result` (Ok) or `error` (Err).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let message = self.recv(until, method);
            if message.get("id") == Some(&json!(id)) {
                if let Some(error) = message.get("error") {
                    return Err(error.clone());
                }
                return Ok(message["result"].clone());
            }
            if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    /// Calls `tool` and answers each question it asks with `result` (an elicitation
    /// result, such as `{"action": "accept", "content": {...}}`); the call's response.
    pub fn call_answering(&mut self, tool: &str, args: Value, result: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}
        }));
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let message = self.recv(until, tool);
            if message["method"] == "elicitation/create" {
                self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": result}));
            } else if message["id"] == id {
                return message;
            } else if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    pub fn tool_names(&mut self) -> Vec<String> {
        let result = self.request("tools/list", json!({})).expect("tools/list");
        let mut names: Vec<String> = result["tools"]
            .as_array()
            .expect("tools array")
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }

    pub fn call_error(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
            .expect_err("the call is refused at the protocol level")
    }

    /// Waits (bounded) for a notification with `method`, consuming it.
    pub fn wait_notification(&mut self, method: &str) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(at) = self
                .notifications
                .iter()
                .position(|n| n["method"] == method)
            {
                self.notifications.remove(at);
                return;
            }
            let message = self.recv(until, method);
            if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    /// Stops the server and returns everything it logged.
    /// Ends the session as a client does, by closing stdin, so the server shuts down and
    /// flushes its log (killed only if it has not exited after a while); returns the log.
    pub fn stop(mut self) -> String {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
