// A consent box cannot ship ticked.

use rmcp_guard::Form;

#[derive(Form)]
struct PreTicked {
    #[form(checkbox, title = "I understand", default = true)]
    confirm: bool,
}

fn main() {}
