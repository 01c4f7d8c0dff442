// A grant never covers a retyped name, an approval on guard's page, a batch's picks or a
// deferred call: each is refused where `grant` is written, naming the fix.
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::batch::{Batch, Picked, Report};
use rmcp_guard::forms::{Checkbox, TypeToConfirm};
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DropArgs {
    /// The table.
    table: String,
}

impl S {
    async fn preview_drop(&self, args: &DropArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.table, format!("Drop {}", args.table)).scope("tables"))
    }

    async fn preview_many(&self, args: &DropArgs) -> Result<Batch, ToolError> {
        Ok(Batch::new(&args.table, format!("Drop under {}", args.table)))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Drop a table.
    #[destructive(
        confirm = "type_to_confirm",
        target = table,
        preview = Self::preview_drop,
        grant = "10m",
        grant_calls = 5
    )]
    #[tool]
    async fn typed(
        &self,
        Parameters(args): Parameters<DropArgs>,
        _confirmed: Confirmed<TypeToConfirm>,
    ) -> Result<String, ToolError> {
        Ok(args.table)
    }

    /// Drop a table once approved on the page.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_drop,
        approve = "url",
        grant = "10m",
        grant_calls = 5
    )]
    #[tool]
    async fn on_the_page(
        &self,
        Parameters(args): Parameters<DropArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.table)
    }

    /// Drop tables.
    #[destructive(batch, preview = Self::preview_many, grant = "10m", grant_calls = 5)]
    #[tool]
    async fn batch(&self, Parameters(_args): Parameters<DropArgs>, picked: Picked) -> Report {
        picked.act(|item| async move { Ok(item.title().to_owned()) }).await
    }

    /// Drop a table later.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_drop,
        defer = "2m",
        grant = "10m",
        grant_calls = 5
    )]
    #[tool]
    async fn deferred(
        &self,
        Parameters(args): Parameters<DropArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.table)
    }
}

fn main() {}
