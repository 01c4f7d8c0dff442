//! `safe-ops --http` serves streamable HTTP on loopback and rejects requests whose Host or
//! Origin is not local (DNS rebinding).

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::stdio::safe_ops_bin;

/// `safe-ops --http` on a free loopback port, stopped when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start() -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(safe_ops_bin())
        .arg("--root")
        .arg(dir.path().join("files"))
        .arg("--db")
        .arg(dir.path().join("ops.db"))
        .env("XDG_CONFIG_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .arg("--http")
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("safe-ops starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "safe-ops did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Server {
        child,
        port,
        _dir: dir,
    }
}

/// Sends an `initialize` POST with the given Host and optional Origin; returns the status.
fn post(port: u16, host: &str, origin: Option<&str>) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).unwrap();
    let line = String::from_utf8_lossy(&head[..n]);
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {line:?}"))
}

#[test]
fn local_host_is_served_and_foreign_host_or_origin_is_rejected() {
    let server = start();
    let local = format!("127.0.0.1:{}", server.port);
    assert_eq!(
        post(server.port, &local, None),
        200,
        "a local client is served"
    );
    assert_eq!(
        post(
            server.port,
            &format!("localhost:{}", server.port),
            Some(&format!("http://localhost:{}", server.port))
        ),
        200,
        "a local browser origin is served"
    );
    assert_eq!(
        post(server.port, "attacker.example", None),
        403,
        "foreign Host (DNS rebinding) is rejected"
    );
    assert_eq!(
        post(server.port, &local, Some("http://attacker.example")),
        403,
        "foreign Origin is rejected"
    );
}

#[test]
fn http_refuses_a_non_loopback_address() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(safe_ops_bin())
        .arg("--root")
        .arg(dir.path().join("files"))
        .arg("--db")
        .arg(dir.path().join("ops.db"))
        .env("XDG_CONFIG_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .args(["--http", "0.0.0.0:0"])
        .output()
        .expect("safe-ops runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loopback only"), "{stderr}");
}
