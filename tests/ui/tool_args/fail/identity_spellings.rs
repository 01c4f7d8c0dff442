// An identity field is refused however it is spelled: `userID`, `UserId`, `userid`,
// `tenantid`, a plural, and the short names (`uid`, `email`, `owner`).

#![allow(non_snake_case)]

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    userID: String,
    UserId: String,
    userid: String,
    tenantid: String,
    TARGET_USER_IDS: Vec<String>,
    uid: u64,
    email: String,
    owner: String,
    onBehalfOf: String,
    username_hint: Option<String>,
}

fn main() {}
