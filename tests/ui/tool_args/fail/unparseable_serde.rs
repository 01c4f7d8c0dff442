// A serde attribute guard cannot read is an error, never skipped: otherwise a rename after
// it would go unchecked. So is a serde option guard does not know.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    #[serde(rename = 5, alias = "user_id")]
    a: String,
    #[serde(rename(wire = "b"))]
    b: String,
    #[serde(renamed = "c")]
    c: String,
}

fn main() {}
