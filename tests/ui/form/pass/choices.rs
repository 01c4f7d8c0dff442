// Every spelling of a choice: single (`enum` or `oneOf`), legacy (`enumNames`) and
// multi-select (`Vec` of a `FormEnum`, optional or not).

use rmcp_guard::form::FieldKind;
use rmcp_guard::{Form, FormEnum};

#[derive(Debug, FormEnum)]
enum Colour {
    #[form(title = "Red")]
    Red,
    Green,
}

#[derive(Debug, Form)]
struct Palette {
    main: Colour,
    #[form(enum_names, default = "green")]
    legacy: Colour,
    #[form(title = "Accents")]
    accents: Vec<Colour>,
    extra: Option<Vec<Colour>>,
}

fn main() {
    let kinds: Vec<&str> = Palette::SPEC
        .fields
        .iter()
        .map(|f| match f.kind {
            FieldKind::Enum { .. } => "enum",
            FieldKind::LegacyEnum { .. } => "legacy",
            FieldKind::MultiEnum { values } if values.len() == 2 => "multi",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["enum", "legacy", "multi", "multi"]);
}
