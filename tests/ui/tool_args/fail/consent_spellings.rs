// A consent flag is refused however it is spelled: case styles, concatenations, and the
// flags that switch a prompt off.

#![allow(non_snake_case)]

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    userConfirmed: bool,
    IsApproved: bool,
    force: bool,
    yes: bool,
    skip_prompt: bool,
    noprompt: bool,
    NON_INTERACTIVE: bool,
    autoapprove: bool,
    r#confirmed: bool,
}

fn main() {}
