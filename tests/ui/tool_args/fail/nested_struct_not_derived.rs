// A nested struct that does not derive `ToolArgs` is refused: guard would not see its names.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Window {
    user_id: String,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    window: Window,
    windows: Vec<Window>,
}

fn main() {}
