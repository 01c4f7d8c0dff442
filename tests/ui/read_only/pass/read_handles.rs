// A `#[read_only]` tool takes read handles and rmcp's request data, however they are spelled.

use rmcp_guard::{Guard, Guarded, ToolError, db::ReadDb, read_only};
use rmcp::{
    Peer, RoleServer,
    handler::server::{
        common::Extension,
        tool::{RequestId, ToolName},
        wrapper::Parameters,
    },
    model::{Extensions, RequestMetaObject},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

type Db = rmcp_guard::db::ReadDb;

#[derive(Deserialize, JsonSchema)]
struct Query {
    table: String,
}

#[derive(Clone)]
struct S {
    guard: std::sync::Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router(server_handler)]
impl S {
    /// Count a table's rows.
    #[read_only]
    #[tool]
    async fn count_rows(
        &self,
        db: ReadDb,
        Parameters(query): Parameters<Query>,
        context: RequestContext<RoleServer>,
    ) -> Result<String, ToolError> {
        let _ = context;
        let count: i64 = db.query_row(
            &format!(
                "SELECT count(*) FROM \"{}\"",
                query.table.replace('"', "\"\"")
            ),
            [],
            |r| r.get(0),
        )?;
        Ok(count.to_string())
    }

    /// Every other read-only extractor, and a read handle behind an alias.
    #[read_only]
    #[tool]
    async fn inspect(
        &self,
        db: Db,
        peer: Peer<RoleServer>,
        extensions: Extensions,
        meta: RequestMetaObject,
    ) -> String {
        let _ = (db, peer, extensions, meta);
        String::from("ok")
    }

    /// The HTTP request parts from the extensions, and the request's id and tool name.
    #[read_only]
    #[tool]
    async fn who_asked(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        id: RequestId,
        name: ToolName,
    ) -> String {
        let _ = (id, name);
        parts.uri.to_string()
    }
}

fn main() {
    let router = S::tool_router();
    for name in ["count_rows", "inspect", "who_asked"] {
        let tool = router.get(name).expect("the tool is routed");
        let hints = tool.annotations.as_ref().expect("guard sets annotations");
        assert_eq!(hints.read_only_hint, Some(true), "{name}");
    }
}
