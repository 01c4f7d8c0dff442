// Under every `rename_all` case style a refused field stays refused: the styles only change
// case and separators, which guard reads through (`UserId`, `TENANT-ID`, even `user_i_d`).
// A style serde does not know is refused with the list of serde's styles. (The pass case
// `matches_serde.rs` shows the derive computes each style's names exactly as serde does.)

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "PascalCase")]
struct Pascal {
    user_id: String,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all(deserialize = "camelCase"))]
struct CamelOnDeserialize {
    user_i_d: String,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all(serialize = "camelCase", deserialize = "snake_case"))]
struct CamelOnSerialize {
    is_approved: bool,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "SCREAMING-KEBAB-CASE")]
struct ScreamingKebab {
    tenant_id: String,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "kebab-case")]
struct Kebab {
    skip_prompt: bool,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "UPPERCASE")]
struct Upper {
    yes: bool,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "camelcase")]
struct UnknownStyle {
    path: String,
}

fn main() {}
