// A secret cannot be the structured content of a tool result either.

use rmcp_guard::Secret;
use serde::Serialize;

#[derive(Serialize)]
struct Report<'a> {
    service: &'a str,
    token: &'a Secret,
}

fn main() {}
