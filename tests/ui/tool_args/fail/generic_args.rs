// guard checks the concrete type of every field, so arguments are not generic.

use guard_runtime::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs<T> {
    path: String,
    extra: T,
}

fn main() {}
