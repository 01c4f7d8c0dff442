// A write handle inside a wrapper is still a write handle: in an `Option`, behind a
// reference, or put into the request's extensions by a layer (guard's `WriteDb`, a sandbox
// that trashes and restores files, a raw connection). `Extension<T>` is a read handle only
// when `T` is.

use std::sync::{Arc, Mutex};

use rmcp::{handler::server::common::Extension, tool, tool_router};
use rmcp_guard::{Answered, Guard, Guarded, ToolError, ask, db::WriteDb, forms, sandbox::Sandbox};

#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router(server_handler)]
impl S {
    /// In an option.
    #[ask(message = "Go on?")]
    #[tool]
    async fn in_option(&self, _db: Option<WriteDb>, _tick: Answered<forms::Checkbox>) -> Result<String, ToolError> {
        Ok("done".into())
    }

    /// Behind a reference.
    #[ask(message = "Go on?")]
    #[tool]
    async fn by_reference(&self, _db: &WriteDb, _tick: Answered<forms::Checkbox>) -> Result<String, ToolError> {
        Ok("done".into())
    }

    /// In the request's extensions.
    #[ask(message = "Go on?")]
    #[tool]
    async fn in_extension(
        &self,
        _db: Extension<WriteDb>,
        _files: Extension<Sandbox>,
        _conn: Extension<Arc<Mutex<rusqlite::Connection>>>,
        _tick: Answered<forms::Checkbox>,
    ) -> Result<String, ToolError> {
        Ok("done".into())
    }
}

fn main() {}
