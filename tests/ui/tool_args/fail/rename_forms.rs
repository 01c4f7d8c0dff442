// Every way serde names a field is checked: `rename`, `rename(serialize)`,
// `rename(deserialize)`, each `alias`, `#[schemars(rename)]` (what the schema tells the model),
// and attributes behind `cfg_attr`. Each refused spelling is reported where it is written.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    #[serde(rename(deserialize = "user_id"))]
    a: String,
    #[serde(rename(serialize = "tenantId", deserialize = "b"))]
    b: String,
    #[serde(rename = "userID")]
    c: String,
    #[serde(alias = "confirmed")]
    d: bool,
    #[serde(alias = "e1", alias = "noPrompt")]
    e: bool,
    #[serde(default, rename = "skip-prompt")]
    f: bool,
    #[schemars(rename = "owner")]
    g: String,
    #[cfg_attr(all(), serde(rename = "Force"))]
    h: bool,
    #[serde(default)]
    #[serde(alias = "APPROVED")]
    i: bool,
}

fn main() {}
