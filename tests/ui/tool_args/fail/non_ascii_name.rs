// A look-alike letter (Cyrillic `е`) or an invisible character would hide a name from the
// check, so argument names must be ASCII.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    #[serde(rename = "us\u{0435}r_id")]
    a: String,
    #[serde(alias = "confirm\u{200b}ed")]
    b: bool,
}

fn main() {}
