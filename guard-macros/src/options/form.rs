//! The options of `#[form(...)]`: on a field of a `#[derive(Form)]` struct, and on a variant
//! of a `#[derive(FormEnum)]` enum.

use super::{Attribute, Declared, Rule, Value};

/// `#[form(...)]` on a form's field.
pub const FORM_FIELD: Attribute = Attribute {
    name: "#[form]",
    guide: "forms.md",
    options: &[
        Declared::new(
            "title",
            Value::Text("Table name"),
            "none",
            "the field's label",
        ),
        Declared::new(
            "description",
            Value::Text("Type the table name to confirm."),
            "the doc comment",
            "the text under the label",
        ),
        Declared::new(
            "min_length",
            Value::Whole,
            "none",
            "the fewest characters a `String` answer has",
        ),
        Declared::new(
            "max_length",
            Value::Whole,
            "none",
            "the most characters a `String` answer has",
        ),
        Declared::new(
            "minimum",
            Value::Number,
            "the type's",
            "the smallest number answer",
        ),
        Declared::new(
            "maximum",
            Value::Number,
            "the type's",
            "the largest number answer",
        ),
        Declared::new(
            "format",
            Value::OneOf(&["email", "uri", "date", "date-time"]),
            "none",
            "the format a `String` answer has",
        ),
        Declared {
            conflicts: &[Rule {
                option: "confirm_text",
                message: "a `#[form(confirm_text)]` field cannot have a default: a pre-filled name is typed by nobody, and a client that fills in defaults turns the retyping into one click. Remove `default`",
            }],
            ..Declared::new(
                "default",
                Value::Literal,
                "none",
                "the answer the client fills in first; never `true` on a checkbox",
            )
        },
        Declared {
            conflicts: &[Rule {
                option: "confirm_text",
                message: "a field is either `#[form(checkbox)]` or `#[form(confirm_text)]`, not both",
            }],
            ..Declared::new(
                "checkbox",
                Value::Flag,
                "off",
                "the plain `bool` the human must tick to confirm (one a form)",
            )
        },
        Declared::new(
            "confirm_text",
            Value::Flag,
            "off",
            "the plain `String` in which the human retypes the target (one a form)",
        ),
        Declared::new(
            "redact",
            Value::Flag,
            "on for free text",
            "whether the audit record leaves the answer out",
        ),
        Declared::new(
            "enum_names",
            Value::Flag,
            "off",
            "spells a single choice as the legacy `enum` + `enumNames`",
        ),
    ],
};

/// `#[form(...)]` on a `FormEnum` variant.
pub const FORM_VARIANT: Attribute = Attribute {
    name: "#[form] on a variant",
    guide: "forms.md",
    options: &[
        Declared::new(
            "value",
            Value::Text("urgent"),
            "the variant's name in snake_case",
            "the value on the wire",
        ),
        Declared::new(
            "title",
            Value::Text("Urgent (pages the on-call)"),
            "none: the value",
            "what the human sees",
        ),
    ],
};
