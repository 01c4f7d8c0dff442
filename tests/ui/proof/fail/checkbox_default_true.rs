// A consent box cannot ship ticked.

use guard_runtime::Form;

#[derive(Form)]
struct PreTicked {
    #[form(checkbox, title = "I understand", default = true)]
    confirm: bool,
}

fn main() {}
