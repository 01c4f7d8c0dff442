// A map or a JSON value accepts any name, so the model could send `confirmed` or `user_id`
// through it. Refused by trait bound: an alias, an `Option` or a `Vec` does not hide it.

use std::collections::{BTreeMap, HashMap};

use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

type Extra = HashMap<String, Value>;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    path: String,
    hash_map: HashMap<String, Value>,
    btree_map: BTreeMap<String, String>,
    json_map: Map<String, Value>,
    value: Value,
    maybe: Option<Value>,
    list: Vec<HashMap<String, bool>>,
    aliased: Extra,
}

fn main() {}
