//! The emitted `requestedSchema` is exact: every keyword survives rmcp's typed model, in
//! declaration order, with `required` = non-`Option` fields without a default.

use rmcp_guard::{Form, FormEnum};
use serde_json::{Value, json};

#[derive(Debug, PartialEq, FormEnum)]
enum Level {
    #[form(title = "Standard")]
    Standard,
    #[form(title = "Urgent", value = "URGENT")]
    Urgent,
}

#[derive(Debug, PartialEq, FormEnum)]
enum Plain {
    Low,
    HighPriority,
}

/// Every field kind and option the derive supports.
#[derive(Debug, Form)]
#[allow(dead_code)]
struct Everything {
    /// Zebra comes first to prove declaration order wins over sorting.
    #[form(title = "Zebra", min_length = 2, max_length = 8)]
    zebra: String,
    #[form(format = "email")]
    email: Option<String>,
    #[form(format = "date-time", title = "When")]
    when: String,
    #[form(minimum = -5, maximum = 10, default = 3)]
    count: i32,
    #[form(minimum = 0.5, maximum = 2.5)]
    ratio: f64,
    #[form(checkbox, default = false, title = "Sure?")]
    sure: bool,
    #[form(default = "standard")]
    level: Level,
    plain: Option<Plain>,
    #[form(format = "uri")]
    link: Option<String>,
    #[form(format = "date")]
    day: Option<String>,
}

fn schema<F: Form>() -> Value {
    serde_json::to_value(F::SPEC.requested_schema()).unwrap()
}

#[test]
fn schema_is_exact_and_ordered() {
    let expected = json!({
        "type": "object",
        "properties": {
            "zebra": {"type": "string", "title": "Zebra", "description": "Zebra comes first to prove declaration order wins over sorting.", "minLength": 2, "maxLength": 8},
            "email": {"type": "string", "format": "email"},
            "when": {"type": "string", "title": "When", "format": "date-time"},
            "count": {"type": "integer", "minimum": -5, "maximum": 10, "default": 3},
            "ratio": {"type": "number", "minimum": 0.5, "maximum": 2.5},
            "sure": {"type": "boolean", "title": "Sure?", "default": false},
            "level": {"type": "string", "oneOf": [{"const": "standard", "title": "Standard"}, {"const": "URGENT", "title": "Urgent"}], "default": "standard"},
            "plain": {"type": "string", "enum": ["low", "high_priority"]},
            "link": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
        },
        "required": ["zebra", "when", "ratio"],
    });
    let actual = schema::<Everything>();
    assert_eq!(actual, expected);
    // Key order on the wire follows the declaration, not the alphabet.
    let declared = [
        "zebra", "email", "when", "count", "ratio", "sure", "level", "plain", "link", "day",
    ];
    let wire = serde_json::to_string(&Everything::SPEC.requested_schema()).unwrap();
    let positions: Vec<usize> = declared
        .iter()
        .map(|k| wire.find(&format!("\"{k}\":{{")).unwrap())
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "properties out of declaration order: {wire}"
    );
}

#[test]
fn every_fragment_survives_rmcps_typed_model() {
    for field in Everything::SPEC.fields {
        let fragment = field.schema();
        let typed: rmcp::model::PrimitiveSchemaDefinition =
            serde_json::from_value(fragment.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(typed).unwrap(),
            fragment,
            "{}",
            field.name
        );
    }
}

#[test]
fn accepted_content_round_trips_through_the_form() {
    let content = json!({
        "zebra": "stripes", "when": "2026-11-30T10:00:00Z", "ratio": 1.5, "sure": true,
        "level": "URGENT", "plain": "high_priority", "email": "a@b.co"
    });
    let object = rmcp_guard::validate::validate(Everything::SPEC, Some(&content)).unwrap();
    let form = Everything::from_valid(object).unwrap();
    assert_eq!(form.level, Level::Urgent);
    assert_eq!(form.plain, Some(Plain::HighPriority));
    assert_eq!(form.count, 3, "absent field takes its default");
    assert_eq!(form.day, None);
    let back = Value::Object(form.to_content());
    assert_eq!(back["level"], "URGENT");
    assert_eq!(back["count"], 3);
    assert_eq!(back["day"], Value::Null);
}

#[test]
fn validator_reports_every_problem() {
    let content = json!({
        "zebra": "z", "when": "yesterday", "ratio": 9, "count": 2.5,
        "level": "asap", "email": "not an email", "extra": 1, "link": "no scheme", "day": "2026-02-30"
    });
    let problems = rmcp_guard::validate::validate(Everything::SPEC, Some(&content)).unwrap_err();
    let text = problems.join("\n");
    for needle in [
        "unknown field `extra`",
        "`zebra` must be at least 2 visible characters",
        "`when` must be a valid date-time",
        "`ratio` must be at most 2.5",
        "`count` must be a whole number",
        "`level` must be one of standard, URGENT",
        "`email` must be a valid email",
        "`link` must be a valid uri",
        "`day` must be a valid date",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert_eq!(problems.len(), 9, "{text}");
}

#[test]
fn type_bounds_are_enforced_even_without_declared_range() {
    #[derive(Debug, Form)]
    #[allow(dead_code)]
    struct Small {
        n: u8,
    }
    assert!(rmcp_guard::validate::validate(Small::SPEC, Some(&json!({"n": 255}))).is_ok());
    let err = rmcp_guard::validate::validate(Small::SPEC, Some(&json!({"n": 256}))).unwrap_err();
    assert!(err[0].contains("must fit u8"), "{err:?}");
    assert!(rmcp_guard::validate::validate(Small::SPEC, Some(&json!({"n": -1}))).is_err());
    assert!(rmcp_guard::validate::validate(Small::SPEC, Some(&json!({"n": "7"}))).is_err());
    assert!(rmcp_guard::validate::validate(Small::SPEC, Some(&json!([7]))).is_err());
    assert!(rmcp_guard::validate::validate(Small::SPEC, None).is_err());
}

/// Every spelling of a choice the elicitation spec defines (SEP-1330), as the official
/// conformance suite reads them.
#[derive(Debug, Form)]
struct Choices {
    /// A multi-select of untitled values: `items.enum`.
    tags: Vec<Plain>,
    /// A multi-select of titled values: `items.anyOf` of `const`/`title`.
    levels: Option<Vec<Level>>,
    /// The legacy titled single choice: `enum` with `enumNames`.
    #[form(enum_names, default = "URGENT")]
    legacy: Level,
}

#[test]
fn choices_are_spelled_as_the_spec_defines_them() {
    let expected = json!({
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "description": "A multi-select of untitled values: `items.enum`.",
                "items": {"type": "string", "enum": ["low", "high_priority"]},
            },
            "levels": {
                "type": "array",
                "description": "A multi-select of titled values: `items.anyOf` of `const`/`title`.",
                "items": {"anyOf": [{"const": "standard", "title": "Standard"}, {"const": "URGENT", "title": "Urgent"}]},
            },
            "legacy": {
                "type": "string",
                "description": "The legacy titled single choice: `enum` with `enumNames`.",
                "enum": ["standard", "URGENT"],
                "enumNames": ["Standard", "Urgent"],
                "default": "URGENT",
            },
        },
        "required": ["tags"],
    });
    assert_eq!(schema::<Choices>(), expected);
    for field in Choices::SPEC.fields {
        let fragment = field.schema();
        let typed: rmcp::model::PrimitiveSchemaDefinition =
            serde_json::from_value(fragment.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(typed).unwrap(),
            fragment,
            "{}",
            field.name
        );
    }
}

#[test]
fn multi_selects_take_distinct_offered_values_only() {
    let valid = |content: &Value| {
        rmcp_guard::validate::validate(Choices::SPEC, Some(content))
            .cloned()
            .map_err(|problems| problems.join("\n"))
    };
    let object = valid(&json!({"tags": ["high_priority", "low"], "levels": ["URGENT"]})).unwrap();
    let form = Choices::from_valid(&object).unwrap();
    assert_eq!(form.tags, [Plain::HighPriority, Plain::Low]);
    assert_eq!(form.levels, Some(vec![Level::Urgent]));
    assert_eq!(form.legacy, Level::Urgent, "absent field takes its default");
    assert_eq!(
        Value::Object(form.to_content())["tags"],
        json!(["high_priority", "low"])
    );
    assert!(
        valid(&json!({"tags": []})).is_ok(),
        "picking none is an answer"
    );

    for (content, needle) in [
        (
            json!({"tags": ["low", "low"]}),
            "`tags` lists \"low\" twice",
        ),
        (
            json!({"tags": ["low", "medium"]}),
            "`tags` may hold only low, high_priority, not \"medium\"",
        ),
        (json!({"tags": ["LOW"]}), "may hold only"),
        (json!({"tags": [1]}), "may hold only"),
        (json!({"tags": "low"}), "`tags` must be a list of choices"),
        (json!({"tags": [["low"]]}), "may hold only"),
        (json!({"levels": ["standard"]}), "`tags` is required"),
        (
            json!({"tags": [], "legacy": "Urgent"}),
            "`legacy` must be one of standard, URGENT",
        ),
    ] {
        let problems = valid(&content).unwrap_err();
        assert!(
            problems.contains(needle),
            "{content}: missing {needle:?} in {problems}"
        );
    }
}
