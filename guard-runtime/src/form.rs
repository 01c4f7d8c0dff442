//! Flat elicitation forms: the static description that `#[derive(Form)]` emits, the exact
//! `requestedSchema` built from it, and typed extraction of an already validated answer.
//!
//! One description feeds both the schema the human sees and the validator that checks what
//! the client sends back, so the two cannot drift apart.

use rmcp::model::{ElicitationSchema, PrimitiveSchemaDefinition};
use serde_json::{Map, Value, json};

/// A flat form that guard can put in front of a human. Derive it; do not implement it by hand.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a guard form",
    label = "not a `#[derive(rmcp_guard::Form)]` struct",
    note = "add `#[derive(rmcp_guard::Form)]` to `{Self}`: the derive checks at compile time that the form is flat and collects no secrets"
)]
pub trait Form: crate::seal::FormDerived + Sized + Send + 'static {
    /// The fields, in declaration order.
    const SPEC: &'static FormSpec;

    /// Builds the form from content that [`crate::validate::validate`] has accepted against [`Self::SPEC`].
    fn from_valid(content: &Map<String, Value>) -> Result<Self, String>;

    /// The accepted answer as JSON.
    fn to_content(&self) -> Map<String, Value>;

    /// The schema the human is asked with. It cannot change at run time: the derive builds
    /// it once per form type and keeps it in a `static` of its own impl.
    #[doc(hidden)]
    fn requested_schema() -> ElicitationSchema {
        Self::SPEC.requested_schema()
    }
}

/// The accepted answer as the audit record keeps it: every field marked
/// [`FieldSpec::redact`] replaced by `"[redacted]"`.
pub fn redacted<F: Form>(form: &F) -> Map<String, Value> {
    let mut content = form.to_content();
    for field in F::SPEC.fields.iter().filter(|f| f.redact) {
        if let Some(value) = content.get_mut(field.name) {
            *value = Value::String(REDACTED.into());
        }
    }
    content
}

/// What a redacted answer reads as in the audit record.
pub const REDACTED: &str = "[redacted]";

/// A unit-only enum offered as a single choice. Derive it with `#[derive(rmcp_guard::FormEnum)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a form field: forms must be flat so every client can render them",
    label = "not a String, bool, number, a `#[derive(FormEnum)]` enum, a `Vec` of one, or an Option of those",
    note = "flatten the nested value into separate fields of this form, or make `{Self}` a unit-only enum with `#[derive(rmcp_guard::FormEnum)]`"
)]
pub trait FormEnum: crate::seal::FormEnumDerived + Sized + Send + 'static {
    /// The allowed wire values, in declaration order.
    const VALUES: &'static [EnumValue];
    /// The variant for a wire value that is one of [`Self::VALUES`].
    fn from_wire(value: &str) -> Option<Self>;
    /// The wire value of this variant.
    fn as_wire(&self) -> &'static str;
}

/// One allowed value of a [`FormEnum`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnumValue {
    /// The value on the wire (the `const`).
    pub value: &'static str,
    /// The label shown to the human.
    pub title: Option<&'static str>,
}

/// The whole form, as declared.
#[derive(Debug)]
pub struct FormSpec {
    /// The Rust type's name.
    pub name: &'static str,
    /// The fields, in declaration order.
    pub fields: &'static [FieldSpec],
    /// Set by the derive's stand-in after a reported compile error, so compile-time checks
    /// on the (empty) stand-in do not pile further errors on the real one.
    #[doc(hidden)]
    pub fallback: bool,
}

/// One declared field and its constraints.
#[derive(Debug)]
pub struct FieldSpec {
    /// The property name on the wire.
    pub name: &'static str,
    /// The label shown to the human.
    pub title: Option<&'static str>,
    /// Help text (from `description = ...` or the doc comment).
    pub description: Option<&'static str>,
    /// The value kind and its constraints.
    pub kind: FieldKind,
    /// True for `Option<_>` fields: absent or `null` means `None`.
    pub optional: bool,
    /// The default shown to the human and used when the field is absent.
    pub default: Option<DefaultValue>,
    /// What the field does for confirmation.
    pub role: FieldRole,
    /// The audit record keeps `"[redacted]"` instead of the answer: `#[form(redact)]`, and
    /// by default every free-text field (a `String` that is neither the retyped target nor
    /// of a `format`); `#[form(redact = false)]` keeps one.
    pub redact: bool,
}

/// What a field does for confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRole {
    /// An ordinary field.
    Plain,
    /// Must be the JSON boolean `true`.
    Checkbox,
    /// Must equal the tool's target after trimming outer whitespace.
    ConfirmText,
}

/// The value kind of a field and its declared constraints.
#[derive(Debug)]
pub enum FieldKind {
    /// A text field.
    String {
        /// At least this many visible characters.
        min_length: Option<u32>,
        /// At most this many visible characters.
        max_length: Option<u32>,
        /// A format the text must have.
        format: Option<Format>,
    },
    /// A whole number.
    Integer {
        /// The declared lower bound.
        minimum: Option<i64>,
        /// The declared upper bound.
        maximum: Option<i64>,
        /// The bounds of the Rust type, always enforced.
        type_min: i128,
        /// The largest value the Rust type holds.
        type_max: i128,
        /// The Rust type, for messages.
        rust_type: &'static str,
    },
    /// A number.
    Number {
        /// The declared lower bound.
        minimum: Option<f64>,
        /// The declared upper bound.
        maximum: Option<f64>,
    },
    /// A yes/no field.
    Boolean,
    /// A single choice: `enum` when no value has a title, else `oneOf` of `const`/`title`.
    Enum {
        /// The allowed values.
        values: &'static [EnumValue],
    },
    /// A single choice in the deprecated spelling some clients still render best: `enum` with
    /// the titles beside it in `enumNames` (`#[form(enum_names)]`).
    LegacyEnum {
        /// The allowed values.
        values: &'static [EnumValue],
    },
    /// Any number of distinct choices (`Vec<E>` of a `FormEnum`): an `array` whose `items`
    /// are an `enum` when no value has a title, else an `anyOf` of `const`/`title`.
    MultiEnum {
        /// The allowed values.
        values: &'static [EnumValue],
    },
}

/// The string formats the elicitation spec allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An email address.
    Email,
    /// An absolute URI.
    Uri,
    /// An RFC 3339 full-date (`2024-01-05`).
    Date,
    /// An RFC 3339 date-time.
    DateTime,
}

impl Format {
    /// The name in JSON Schema (`date-time`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Email => "email",
            Format::Uri => "uri",
            Format::Date => "date",
            Format::DateTime => "date-time",
        }
    }
}

/// A declared default, shown to the human and used when the field is absent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// A text or enum default.
    Str(&'static str),
    /// A whole-number default.
    Int(i64),
    /// A number default.
    Num(f64),
    /// A yes/no default.
    Bool(bool),
}

impl DefaultValue {
    fn to_json(self) -> Value {
        match self {
            DefaultValue::Str(s) => json!(s),
            DefaultValue::Int(i) => json!(i),
            DefaultValue::Num(n) => json!(n),
            DefaultValue::Bool(b) => json!(b),
        }
    }
}

impl FieldSpec {
    /// Required means: not `Option<_>` and no default.
    pub fn required(&self) -> bool {
        !self.optional && self.default.is_none()
    }

    /// The JSON Schema fragment for this property, with only the keywords the spec allows.
    pub fn schema(&self) -> Value {
        let mut out = Map::new();
        let mut put = |key: &str, value: Value| {
            out.insert(key.to_owned(), value);
        };
        let type_name = match &self.kind {
            FieldKind::String { .. } | FieldKind::Enum { .. } | FieldKind::LegacyEnum { .. } => {
                "string"
            }
            FieldKind::MultiEnum { .. } => "array",
            FieldKind::Integer { .. } => "integer",
            FieldKind::Number { .. } => "number",
            FieldKind::Boolean => "boolean",
        };
        put("type", json!(type_name));
        if let Some(title) = self.title {
            put("title", json!(title));
        }
        if let Some(description) = self.description {
            put("description", json!(description));
        }
        match &self.kind {
            FieldKind::String {
                min_length,
                max_length,
                format,
            } => {
                if let Some(n) = min_length {
                    put("minLength", json!(n));
                }
                if let Some(n) = max_length {
                    put("maxLength", json!(n));
                }
                if let Some(format) = format {
                    put("format", json!(format.as_str()));
                }
            }
            FieldKind::Integer {
                minimum, maximum, ..
            } => {
                if let Some(n) = minimum {
                    put("minimum", json!(n));
                }
                if let Some(n) = maximum {
                    put("maximum", json!(n));
                }
            }
            FieldKind::Number { minimum, maximum } => {
                if let Some(n) = minimum {
                    put("minimum", json!(n));
                }
                if let Some(n) = maximum {
                    put("maximum", json!(n));
                }
            }
            FieldKind::Boolean => {}
            FieldKind::Enum { values } => match titled(values) {
                Some(one_of) => put("oneOf", one_of),
                None => put("enum", wire_values(values)),
            },
            FieldKind::LegacyEnum { values } => {
                put("enum", wire_values(values));
                put(
                    "enumNames",
                    json!(
                        values
                            .iter()
                            .map(|v| v.title.unwrap_or(v.value))
                            .collect::<Vec<_>>()
                    ),
                );
            }
            FieldKind::MultiEnum { values } => match titled(values) {
                Some(any_of) => put("items", json!({ "anyOf": any_of })),
                None => put(
                    "items",
                    json!({ "type": "string", "enum": wire_values(values) }),
                ),
            },
        }
        if let Some(default) = self.default {
            put("default", default.to_json());
        }
        Value::Object(out)
    }
}

/// The wire values of a choice, in declaration order.
fn wire_values(values: &[EnumValue]) -> Value {
    json!(values.iter().map(|v| v.value).collect::<Vec<_>>())
}

/// The `const`/`title` pairs of a choice in which some value has a title (an untitled one
/// shows its wire value); `None` when none has.
fn titled(values: &[EnumValue]) -> Option<Value> {
    values.iter().any(|v| v.title.is_some()).then(|| {
        values
            .iter()
            .map(|v| json!({"const": v.value, "title": v.title.unwrap_or(v.value)}))
            .collect()
    })
}

impl FormSpec {
    /// The exact `requestedSchema`: properties in declaration order, `required` = the
    /// non-`Option` fields without a default.
    pub fn requested_schema(&self) -> ElicitationSchema {
        let mut properties = std::collections::BTreeMap::new();
        for field in self.fields {
            // Every fragment uses only keywords rmcp's typed schema models, so this
            // conversion is lossless; `tests` prove the round trip byte for byte.
            let definition: PrimitiveSchemaDefinition = serde_json::from_value(field.schema())
                .unwrap_or_else(|e| {
                    unreachable!("guard built an invalid schema for `{}`: {e}", field.name)
                });
            properties.insert(field.name.to_owned(), definition);
        }
        let mut schema = ElicitationSchema::new(properties);
        schema.property_order = Some(self.fields.iter().map(|f| f.name.to_owned()).collect());
        let required: Vec<String> = self
            .fields
            .iter()
            .filter(|f| f.required())
            .map(|f| f.name.to_owned())
            .collect();
        schema.required = (!required.is_empty()).then_some(required);
        schema
    }

    /// The field that plays `role`, if the form has one.
    pub fn field_with_role(&self, role: FieldRole) -> Option<&'static FieldSpec> {
        self.fields.iter().find(|f| f.role == role)
    }
}

/// Reads one validated field into its Rust type. Implemented for every type a form may hold.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a form field: forms must be flat so every client can render them",
    label = "not a String, bool, number, a `#[derive(FormEnum)]` enum, a `Vec` of one, or an Option of those",
    note = "flatten the nested value into separate fields of this form, or offer choices: a unit-only enum with `#[derive(rmcp_guard::FormEnum)]`, or a `Vec` of one for a multi-select"
)]
pub trait FieldValue: Sized {
    /// The offered choices, for single-choice enum fields.
    const CHOICES: &'static [EnumValue] = &[];

    /// Reads the validated value of `field` (absent: `None`).
    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String>;
    /// The value as JSON, for audit and previews.
    fn to_json(&self) -> Value;

    /// guard implements this trait for the flat kinds only: a nested type cannot pose as a
    /// field, because implementing it means naming guard's private items.
    #[doc(hidden)]
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind);
}

fn present(value: Option<&Value>, field: &FieldSpec) -> Result<Value, String> {
    match value.filter(|v| !v.is_null()) {
        Some(v) => Ok(v.clone()),
        None => field
            .default
            .map(DefaultValue::to_json)
            .ok_or_else(|| format!("`{}` is missing", field.name)),
    }
}

impl FieldValue for String {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        match present(value, field)? {
            Value::String(s) => Ok(s),
            _ => Err(format!("`{}` must be a string", field.name)),
        }
    }

    fn to_json(&self) -> Value {
        json!(self)
    }
}

impl FieldValue for bool {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        present(value, field)?
            .as_bool()
            .ok_or_else(|| format!("`{}` must be true or false", field.name))
    }

    fn to_json(&self) -> Value {
        json!(self)
    }
}

macro_rules! integer_field {
    ($($t:ty),*) => {$(
        impl FieldValue for $t {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

            fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
                let v = present(value, field)?;
                v.as_i64()
                    .and_then(|n| <$t>::try_from(n).ok())
                    .or_else(|| v.as_u64().and_then(|n| <$t>::try_from(n).ok()))
                    .ok_or_else(|| format!("`{}` must be an integer that fits {}", field.name, stringify!($t)))
            }

            fn to_json(&self) -> Value {
                json!(self)
            }
        }
    )*};
}
integer_field!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl FieldValue for f64 {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        present(value, field)?
            .as_f64()
            .ok_or_else(|| format!("`{}` must be a number", field.name))
    }

    fn to_json(&self) -> Value {
        json!(self)
    }
}

impl FieldValue for f32 {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        f64::from_field(value, field).map(|n| n as f32)
    }

    fn to_json(&self) -> Value {
        json!(self)
    }
}

impl<T: FieldValue> FieldValue for Option<T> {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

    const CHOICES: &'static [EnumValue] = T::CHOICES;

    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        match value.filter(|v| !v.is_null()) {
            None if field.default.is_none() => Ok(None),
            v => T::from_field(v, field).map(Some),
        }
    }

    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_json)
    }
}

impl<E: FormEnum> FieldValue for E {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

    const CHOICES: &'static [EnumValue] = E::VALUES;

    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        let v = present(value, field)?;
        v.as_str()
            .and_then(E::from_wire)
            .ok_or_else(|| format!("`{}` is not one of the offered choices", field.name))
    }

    fn to_json(&self) -> Value {
        json!(self.as_wire())
    }
}

/// A field the derive reads as a single choice: its type as written is neither `String`,
/// `bool`, a number nor `Vec<_>`. Only a `FormEnum` (or an `Option` of one) is one, so a
/// type alias of another field type (`type Seats = Vec<Seat>`), whose kind the derive cannot
/// see, fails to compile here instead of publishing the wrong schema.
#[diagnostic::on_unimplemented(
    message = "this form field is read as a single choice, and `{Self}` is not a `#[derive(FormEnum)]` enum",
    label = "guard reads a field's kind from its type as written",
    note = "behind a type alias? guard cannot see through one: write `{Self}` in the field itself, so a `Vec<...>` of choices is published as a multi-select and `String`, `bool` or a number as a free value",
    note = "a nested value cannot be a form field, as forms must be flat so every client can render them: flatten it into separate fields of this form, or make it a unit-only enum with `#[derive(rmcp_guard::FormEnum)]`"
)]
pub trait Choice: Sized {
    /// The offered choices.
    const VALUES: &'static [EnumValue];
    /// Reads the validated value of `field`, as [`FieldValue::from_field`].
    fn from_choice(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String>;
    /// The value as JSON, as [`FieldValue::to_json`].
    fn choice_json(&self) -> Value;

    /// Implemented by guard for `FormEnum` and `Option` of one only.
    #[doc(hidden)]
    fn __guard_only_choices(_: crate::seal::FlatKind);
}

impl<E: FormEnum> Choice for E {
    fn __guard_only_choices(_: crate::seal::FlatKind) {}

    const VALUES: &'static [EnumValue] = E::VALUES;

    fn from_choice(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        <E as FieldValue>::from_field(value, field)
    }

    fn choice_json(&self) -> Value {
        FieldValue::to_json(self)
    }
}

impl<E: FormEnum> Choice for Option<E> {
    fn __guard_only_choices(_: crate::seal::FlatKind) {}

    const VALUES: &'static [EnumValue] = E::VALUES;

    fn from_choice(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        <Option<E> as FieldValue>::from_field(value, field)
    }

    fn choice_json(&self) -> Value {
        FieldValue::to_json(self)
    }
}

/// A multi-select: the distinct choices the human picked, in the order the client sent them.
impl<E: FormEnum> FieldValue for Vec<E> {
    fn __guard_only_flat_kinds(_: crate::seal::FlatKind) {}

    const CHOICES: &'static [EnumValue] = E::VALUES;

    fn from_field(value: Option<&Value>, field: &FieldSpec) -> Result<Self, String> {
        let Some(Value::Array(items)) = value.filter(|v| !v.is_null()) else {
            return match value.filter(|v| !v.is_null()) {
                None => Ok(Vec::new()),
                Some(_) => Err(format!("`{}` must be a list of choices", field.name)),
            };
        };
        items
            .iter()
            .map(|item| {
                item.as_str().and_then(E::from_wire).ok_or_else(|| {
                    format!(
                        "`{}` holds a value that is not one of the offered choices",
                        field.name
                    )
                })
            })
            .collect()
    }

    fn to_json(&self) -> Value {
        json!(self.iter().map(E::as_wire).collect::<Vec<_>>())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{Form, REDACTED, redacted};

    /// Every kind of field, redacted by choice or by default, or kept.
    #[derive(Debug, crate::Form)]
    #[allow(dead_code)]
    struct Answer {
        #[form(redact)]
        ticked: bool,
        #[form(redact)]
        count: i64,
        note: String,
        #[form(redact = false)]
        approver: String,
        #[form(format = "email")]
        contact: String,
        level: i64,
        done: bool,
    }

    #[test]
    fn marked_fields_and_free_text_are_redacted_the_rest_kept() {
        let content = json!({
            "ticked": true, "count": 3, "note": "the plan is secret", "approver": "ada",
            "contact": "ada@example.com", "level": 2, "done": false
        });
        let Value::Object(content) = content else {
            unreachable!()
        };
        let answer = Answer::from_valid(&content).unwrap();
        assert_eq!(
            Value::Object(redacted(&answer)),
            json!({
                "ticked": REDACTED, "count": REDACTED, "note": REDACTED, "approver": "ada",
                "contact": "ada@example.com", "level": 2, "done": false
            })
        );
    }
}
