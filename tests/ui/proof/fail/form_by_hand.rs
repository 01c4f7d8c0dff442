// `Form` cannot be implemented by hand: a hand-written impl could describe fields the
// struct does not have (a checkbox that is never shown) and skip every derive check.

use rmcp_guard::Form;
use rmcp_guard::__private::serde_json::{Map, Value};

struct Lying {
    note: String,
}

impl Form for Lying {
    const SPEC: &'static rmcp_guard::form::FormSpec = &rmcp_guard::form::FormSpec {
        name: "Lying",
        fields: &[],
        fallback: false,
    };

    fn from_valid(_: &Map<String, Value>) -> Result<Self, String> {
        Ok(Lying { note: String::new() })
    }

    fn to_content(&self) -> Map<String, Value> {
        let _ = &self.note;
        Map::new()
    }
}

fn main() {}
