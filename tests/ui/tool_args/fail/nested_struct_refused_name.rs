// A nested argument struct derives `ToolArgs` too, so its names are checked as well.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct Window {
    user_id: String,
    confirmed: bool,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    window: Option<Window>,
}

fn main() {}
