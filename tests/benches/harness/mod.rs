//! What the in-process benches share: a scratch directory, and one client connection to a
//! server whose `delete_file` each measured call drives on a freshly written file.

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, ProtocolVersion},
    service::RunningService,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

/// The bytes written to every file before it is deleted.
pub const CONTENT: &[u8] = b"rotated log lines\nrotated log lines\nrotated log lines\n";

/// A scratch directory in memory when the system has one: on a disk file system, creating
/// and deleting tens of thousands of files makes the kernel's inode allocation (the unmeasured
/// setup) slow and noisy enough to disturb the measured calls.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("temp dir")
}

/// One measured side: a server over `tokio::io::duplex`, driven on protocol 2025-11-25 by a
/// `ScriptedHuman` that ticks the box.
pub struct Side {
    pub root: PathBuf,
    human: ScriptedHuman,
    pub client: RunningService<RoleClient, ScriptedHuman>,
    pub next: AtomicU64,
}

impl Side {
    pub async fn connect<S>(server: S, root: PathBuf) -> Side
    where
        S: rmcp::ServerHandler,
    {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let human = ScriptedHuman::new(ProtocolVersion::V_2025_11_25);
        let client = human
            .clone()
            .serve(client_io)
            .await
            .expect("the client connects");
        Side {
            root,
            human,
            client,
            next: AtomicU64::new(0),
        }
    }

    /// Not timed: writes a fresh file and queues the human's "yes".
    pub fn prepare(&self) -> String {
        let name = format!("f{:09}.log", self.next.fetch_add(1, Ordering::Relaxed));
        std::fs::write(self.root.join(&name), CONTENT).expect("write the file");
        self.human.will(Answer::Accept(json!({"confirm": true})));
        name
    }

    /// Timed: one `tools/call`, checked to have deleted the file.
    pub async fn delete(&self, name: String) {
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), Value::String(name));
        let result = self
            .client
            .call_tool(CallToolRequestParams::new("delete_file").with_arguments(arguments))
            .await
            .expect("the call completes");
        let said = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str())
            .unwrap_or_default();
        assert!(
            result.is_error != Some(true) && said.starts_with("Deleted "),
            "the call did not delete the file: {said}"
        );
    }
}
