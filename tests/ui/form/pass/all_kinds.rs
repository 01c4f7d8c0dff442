// Every flat field kind a form accepts, with every field option.

use rmcp_guard::form::{DefaultValue, FieldKind, FieldRole, FieldSpec, Format};
use rmcp_guard::{Form, FormEnum};

#[derive(Debug, FormEnum)]
enum Region {
    #[form(title = "Europe")]
    Eu,
    UsEast,
}

#[derive(Debug, Form)]
struct Everything {
    /// Tick to confirm.
    #[form(checkbox, title = "I understand", default = false)]
    confirm: bool,
    #[form(confirm_text, title = "Type the name")]
    typed_name: String,
    #[form(
        title = "Reason",
        description = "Why this is needed",
        min_length = 1,
        max_length = 500
    )]
    reason: String,
    #[form(format = "email")]
    contact: String,
    #[form(format = "uri")]
    ticket_url: Option<String>,
    #[form(format = "date")]
    day: Option<String>,
    #[form(format = "date-time", default = "2030-01-01T00:00:00Z")]
    at: String,
    #[form(default = true)]
    notify: bool,
    maybe: Option<bool>,
    #[form(minimum = -10, maximum = 10, default = -3)]
    offset: i8,
    a: i16,
    b: i32,
    c: i64,
    d: isize,
    #[form(minimum = 1, maximum = 30, default = 7)]
    keep_days: u8,
    e: u16,
    f: u32,
    g: Option<u64>,
    h: usize,
    #[form(minimum = 0.5, maximum = 99.5, default = 1.5)]
    ratio: f64,
    #[form(minimum = -1, default = 0)]
    weight: f32,
    threshold: Option<f64>,
    #[form(title = "Region", default = "us_east")]
    region: Region,
    fallback_region: Option<Region>,
}

/// The form's roles are read from its description: one checkbox, one typed-name field.
fn has_roles<F: Form>() -> bool {
    let count = |role| F::SPEC.fields.iter().filter(|f| f.role == role).count();
    count(FieldRole::Checkbox) == 1 && count(FieldRole::ConfirmText) == 1
}

fn field(name: &str) -> &'static FieldSpec {
    Everything::SPEC
        .fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field {name}"))
}

fn main() {
    assert!(has_roles::<Everything>());
    assert_eq!(Everything::SPEC.fields.len(), 24);

    let confirm = field("confirm");
    assert_eq!(confirm.role, FieldRole::Checkbox);
    assert_eq!(confirm.description, Some("Tick to confirm."));
    assert!(matches!(confirm.default, Some(DefaultValue::Bool(false))));
    assert_eq!(field("typed_name").role, FieldRole::ConfirmText);

    let reason = field("reason");
    assert_eq!(reason.description, Some("Why this is needed"));
    assert!(matches!(
        reason.kind,
        FieldKind::String {
            min_length: Some(1),
            max_length: Some(500),
            format: None
        }
    ));
    for (name, format) in [
        ("contact", Format::Email),
        ("ticket_url", Format::Uri),
        ("day", Format::Date),
        ("at", Format::DateTime),
    ] {
        assert!(
            matches!(field(name).kind, FieldKind::String { format: Some(f), .. } if f == format),
            "{name}"
        );
    }
    assert!(field("ticket_url").optional);
    assert!(!field("contact").optional);

    assert!(matches!(
        field("offset").kind,
        FieldKind::Integer {
            minimum: Some(-10),
            maximum: Some(10),
            type_min: -128,
            type_max: 127,
            ..
        }
    ));
    assert!(matches!(
        field("offset").default,
        Some(DefaultValue::Int(-3))
    ));
    assert!(matches!(
        field("h").kind,
        FieldKind::Integer {
            rust_type: "usize",
            ..
        }
    ));
    assert!(matches!(
        field("ratio").kind,
        FieldKind::Number {
            minimum: Some(0.5),
            maximum: Some(99.5)
        }
    ));
    assert!(matches!(
        field("ratio").default,
        Some(DefaultValue::Num(1.5))
    ));
    assert!(matches!(
        field("weight").default,
        Some(DefaultValue::Num(0.0))
    ));
    assert!(matches!(field("maybe").kind, FieldKind::Boolean));

    let FieldKind::Enum { values } = field("region").kind else {
        panic!("region is a choice");
    };
    assert_eq!(values, Region::VALUES);
    assert_eq!(values[0].value, "eu");
    assert_eq!(values[0].title, Some("Europe"));
    assert_eq!(values[1].value, "us_east");
    assert!(matches!(
        field("region").default,
        Some(DefaultValue::Str("us_east"))
    ));
    assert!(field("fallback_region").optional);
}
