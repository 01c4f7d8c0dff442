// A secret is refused by what the human reads next to the field, not only by its name.

use rmcp_guard::Form;

#[derive(Form)]
struct Login {
    #[form(title = "Password")]
    code: String,
    /// Your API key for the billing service.
    word: String,
    #[form(title = "Ticket", description = "The access token of the deploy bot")]
    ticket: String,
}

#[derive(Form, schemars::JsonSchema)]
struct Unlock {
    #[schemars(title = "PIN")]
    digits: String,
}

fn main() {}
