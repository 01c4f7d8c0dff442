// `enum_names` spells a single choice; on free text or a multi-select it means nothing.

use rmcp_guard::{Form, FormEnum};

#[derive(FormEnum)]
enum Colour {
    Red,
    Green,
}

#[derive(Form)]
struct Palette {
    #[form(enum_names)]
    name: String,
    #[form(enum_names)]
    accents: Vec<Colour>,
}

fn main() {}
