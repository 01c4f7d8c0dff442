// A complete guarded MCP server on stdio: one read-only tool, one destructive tool that asks
// the human to tick a box first, and an allowlist naming the tools it publishes.
//
// `GUARD_ALLOWLIST=allowlist.toml minimal` (the file: `tools = ["list_notes", "delete_note"]`).
use std::{collections::BTreeMap, sync::Mutex};

use rmcp::{ServerHandler, ServiceExt, handler::server::wrapper::Parameters, model::*};
use rmcp::{tool, tool_handler};
use rmcp_guard::tool_router;
use rmcp_guard::{Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError, forms};
use rmcp_guard::{destructive, exposed, read_only};

struct Notes {
    notes: Mutex<BTreeMap<String, String>>,
    guard: Guard,
}

impl Guarded for Notes {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct DeleteArgs {
    /// The title of the note to delete.
    title: String,
}

#[tool_router]
impl Notes {
    /// List the titles of all notes.
    #[read_only]
    #[tool]
    async fn list_notes(&self) -> Result<String, ToolError> {
        let notes = self.notes.lock().unwrap();
        Ok(notes.keys().cloned().collect::<Vec<_>>().join("\n"))
    }

    /// Delete a note, after the user ticks a confirmation box.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_note(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<forms::Checkbox>,
    ) -> Result<String, ToolError> {
        self.notes.lock().unwrap().remove(&args.title);
        Ok(format!("Deleted the note {:?}.", args.title))
    }

    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        let title = &args.title;
        Ok(match self.notes.lock().unwrap().get(title) {
            None => Preview::nothing(format!("No note is titled {title:?}.")),
            Some(text) => {
                Preview::effect(title, format!("Delete {title:?} ({} bytes).", text.len()))
            }
        })
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Notes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("minimal {}", env!("CARGO_PKG_VERSION"));
        return Ok(());
    }
    // guard says through `tracing` what keeps it from serving (a misspelled allowlist, a
    // broken key); stdout carries the protocol, so the log goes to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let guard = Guard::from_env()?.with_exposure(Exposure::from_env()?);
    let notes = Mutex::new(BTreeMap::from([("groceries".into(), "milk, eggs".into())]));
    let running = Notes { notes, guard }
        .serve(rmcp::transport::stdio())
        .await?;
    running.waiting().await?;
    Ok(())
}
