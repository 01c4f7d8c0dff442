// Names that only resemble consent or identity words are accepted, and so are serde
// attributes that do not hide a name.

use guard_runtime::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
struct DeployArgs {
    service: String,
    approval_level: Option<String>,
    user_agent_hint: Option<String>,
    #[serde(rename = "orderNo", default)]
    order_no: u32,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct NoArgs {}

fn checked<T: ToolArgs>() -> bool {
    true
}

fn main() {
    assert!(checked::<DeployArgs>());
    assert!(checked::<NoArgs>());
}
