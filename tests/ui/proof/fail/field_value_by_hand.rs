// A nested type cannot pose as a flat form field by implementing `FieldValue` itself.

use rmcp_guard::form::{FieldSpec, FieldValue};
use rmcp_guard::__private::serde_json::Value;

struct Address {
    street: String,
}

impl FieldValue for Address {
    fn from_field(_: Option<&Value>, _: &FieldSpec) -> Result<Self, String> {
        Ok(Address { street: String::new() })
    }

    fn to_json(&self) -> Value {
        Value::String(self.street.clone())
    }
}

fn main() {}
