// A typed-name field cannot come pre-filled: a client that fills in schema defaults would
// turn "type the name" into one click.

use rmcp_guard::Form;

#[derive(Form)]
struct PreTyped {
    /// Type the table name exactly to confirm.
    #[form(confirm_text, default = "orders")]
    typed_name: String,
}

fn main() {}
