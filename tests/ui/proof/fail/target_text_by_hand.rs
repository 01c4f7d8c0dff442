// The type-to-confirm target is a `String` argument: a type of one's own cannot pose as one
// and choose the text the human must type.

use rmcp_guard::__private::TargetText;

struct OrderId(u64);

impl TargetText for OrderId {
    fn target_text(&self) -> &str {
        let _ = self.0;
        ""
    }
}

fn main() {}
