// An enum argument is a choice of values: data-carrying variants are refused (serde would
// turn their names into keys), and a tag or content key is a name the model sends.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
enum Target {
    File { path: String },
    Table(String),
    Everything,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(tag = "confirmed")]
enum Mode {
    Soft,
    Hard,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(tag = "kind", content = "userId")]
enum Level {
    Low,
    High,
}

fn main() {}
