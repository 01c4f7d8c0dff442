// Names that only resemble consent or identity words are accepted, and so are serde
// attributes that do not hide a name.

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields, crate = "serde", expecting = "deploy arguments")]
#[schemars(title = "Deploy", extend("x-kind" = "deploy"))]
struct DeployArgs {
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[a-z-]+$"))]
    service: String,
    approval_level: Option<String>,
    user_agent_hint: Option<String>,
    #[serde(rename = "orderNo", default)]
    order_no: u32,
}

/// Each of these reads close to a refused name; none of them is one.
#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct NearMisses {
    reason: String,
    approver: String,
    typed_name: String,
    tokenizer_name: String,
    spinner: String,
    path: String,
    table: String,
    forecast: String,
    passage: String,
    pinned: bool,
    confirmation_message_id: String,
    idempotency_key: String,
    page_token: Option<String>,
    subject: String,
    recipient_email: String,
    order_uid: String,
    lieutenant: String,
    enforce_quota: bool,
    unconfirmed_only: bool,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "plain::deserialize"
    )]
    note: Option<String>,
}

mod plain {
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

/// A field the model cannot send is not an argument: serde fills it with its default.
#[derive(Deserialize, JsonSchema, ToolArgs)]
struct WithServerSide {
    path: String,
    #[serde(skip)]
    #[allow(dead_code)]
    user_id: String,
    #[serde(skip_deserializing)]
    #[allow(dead_code)]
    extra: std::collections::HashMap<String, String>,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct NoArgs {}

fn checked<T: ToolArgs>() -> bool {
    true
}

fn main() {
    assert!(checked::<DeployArgs>());
    assert!(checked::<NearMisses>());
    assert!(checked::<NoArgs>());
    let args: WithServerSide =
        serde_json::from_str(r#"{"path": "a.txt", "user_id": "mallory"}"#).unwrap();
    assert_eq!(args.path, "a.txt");
    assert_eq!(
        args.user_id, "",
        "a skipped field never takes the model's value"
    );
}
