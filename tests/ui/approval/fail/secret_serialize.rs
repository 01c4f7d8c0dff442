// A secret from the approval page cannot be serialised into a result, a log line or a record.

use rmcp_guard::{Confirmed, Secret, forms::Checkbox};

fn leak(confirmed: &Confirmed<Checkbox>) -> String {
    let secret: &Secret = confirmed.secret().expect("asked on the page");
    serde_json::to_string(secret).unwrap()
}

fn main() {
    let _ = leak;
}
