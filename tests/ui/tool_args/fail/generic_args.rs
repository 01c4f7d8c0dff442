// guard checks the concrete type of every field, so arguments are not generic.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs<T> {
    path: String,
    extra: T,
}

fn main() {}
