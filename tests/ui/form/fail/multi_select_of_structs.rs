// A multi-select offers choices: its items must be a `#[derive(FormEnum)]` enum.

use rmcp_guard::Form;

struct Address {
    street: String,
}

#[derive(Form)]
struct Contacts {
    addresses: Vec<Address>,
}

fn main() {}
