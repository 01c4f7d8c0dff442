// The check is on the type the compiler resolves, not on how it is spelled: an alias, a
// renamed import, a full path, an associated type and a macro all still name `WriteDb`.

use std::sync::Arc;

use rmcp::{tool, tool_router};
use rmcp_guard::db::WriteDb as Db;
use rmcp_guard::{Answered, Guard, Guarded, ToolError, ask, forms};

type Handle = rmcp_guard::db::WriteDb;

macro_rules! handle {
    () => {
        rmcp_guard::db::WriteDb
    };
}

trait Handles {
    type Db;
}

impl Handles for S {
    type Db = Handle;
}

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
    /// Through an alias.
    #[ask(message = "Go on?")]
    #[tool]
    async fn by_alias(&self, _db: Handle, _tick: Answered<forms::Checkbox>) -> Result<String, ToolError> {
        Ok("done".into())
    }

    /// Through a renamed import.
    #[ask(message = "Go on?")]
    #[tool]
    async fn by_renamed_import(&self, _db: Db, _tick: Answered<forms::Checkbox>) -> Result<String, ToolError> {
        Ok("done".into())
    }

    /// Through its full path.
    #[ask(message = "Go on?")]
    #[tool]
    async fn by_full_path(
        &self,
        _db: ::rmcp_guard::db::WriteDb,
        _tick: Answered<forms::Checkbox>,
    ) -> Result<String, ToolError> {
        Ok("done".into())
    }

    /// Through an associated type.
    #[ask(message = "Go on?")]
    #[tool]
    async fn by_associated_type(
        &self,
        _db: <S as Handles>::Db,
        _tick: Answered<forms::Checkbox>,
    ) -> Result<String, ToolError> {
        Ok("done".into())
    }

    /// Through a macro.
    #[ask(message = "Go on?")]
    #[tool]
    async fn by_macro(&self, _db: handle!(), _tick: Answered<forms::Checkbox>) -> Result<String, ToolError> {
        Ok("done".into())
    }
}

fn main() {}
