// A destructive tool whose confirmed effect waits: with arguments and a custom form, and
// without arguments; both are routed, and the server publishes `withdraw`.
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::forms::Checkbox;
use rmcp_guard::{Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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
struct AccountArgs {
    /// The account to close.
    account: String,
}

#[derive(Form)]
struct Closing {
    /// Why the account closes.
    reason: String,
}

impl S {
    async fn preview_close(&self, args: &AccountArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.account, format!("Close {}", args.account)))
    }

    async fn preview_reset(&self) -> Result<Preview, ToolError> {
        Ok(Preview::effect("cache", "Empty the cache"))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Close an account, two minutes after the user confirms.
    #[destructive(form = Closing, preview = Self::preview_close, defer = "2m")]
    #[tool]
    async fn close_account(
        &self,
        Parameters(args): Parameters<AccountArgs>,
        confirmed: Confirmed<Closing>,
    ) -> Result<String, ToolError> {
        Ok(format!("Closed {} ({}).", args.account, confirmed.form().reason))
    }

    /// Empty the cache, in an hour.
    #[destructive(confirm = "checkbox", preview = Self::preview_reset, defer = "1h")]
    #[tool]
    async fn reset_cache(&self, _confirmed: Confirmed<Checkbox>) -> Result<String, ToolError> {
        Ok("Emptied.".into())
    }
}

fn main() {
    let router = S::tool_router();
    assert!(router.has_route("close_account"));
    assert!(router.has_route("reset_cache"));
}
