// `from`/`try_from` read the model's arguments as another type, whose names guard does not
// see; `remote` derives for a type guard does not see either.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Raw {
    path: String,
}

impl From<Raw> for DeleteArgs {
    fn from(raw: Raw) -> Self {
        DeleteArgs { path: raw.path }
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(from = "Raw")]
struct DeleteArgs {
    path: String,
}

impl TryFrom<Raw> for MoveArgs {
    type Error = String;
    fn try_from(raw: Raw) -> Result<Self, String> {
        Ok(MoveArgs { path: raw.path })
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(try_from = "Raw")]
struct MoveArgs {
    path: String,
}

fn main() {}
