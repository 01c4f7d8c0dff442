use rmcp_guard::form::{DefaultValue, FieldKind, FieldRole, FieldSpec, Format};
use rmcp_guard::{Form, FormEnum};
#[derive(Debug, FormEnum)]
enum Region {
    #[form(title = "Europe")]
    Eu,
    UsEast,
}
impl ::rmcp_guard::__private::FormEnumDerived for Region {}
impl ::rmcp_guard::FormEnum for Region {
    const VALUES: &'static [::rmcp_guard::form::EnumValue] = &[
        ::rmcp_guard::form::EnumValue {
            value: "eu",
            title: ::core::option::Option::Some("Europe"),
        },
        ::rmcp_guard::form::EnumValue {
            value: "us_east",
            title: ::core::option::Option::None,
        },
    ];
    fn from_wire(value: &str) -> ::core::option::Option<Self> {
        match value {
            "eu" => ::core::option::Option::Some(Self::Eu),
            "us_east" => ::core::option::Option::Some(Self::UsEast),
            _ => ::core::option::Option::None,
        }
    }
    fn as_wire(&self) -> &'static str {
        match self {
            Self::Eu => "eu",
            Self::UsEast => "us_east",
        }
    }
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
const _: () = if !::rmcp_guard::__private::offers(
    <Region as ::rmcp_guard::form::Choice>::VALUES,
    "us_east",
) {
    ::core::panic!(
        "`default = \"us_east\"` is not one of the choices of form field `region`, so the human would be shown a default they cannot pick. Write the wire value of one of its variants: the variant's name in snake_case, or its `#[form(value = \"...\")]`"
    )
};
impl ::rmcp_guard::__private::CheckboxForm for Everything {}
impl ::rmcp_guard::__private::TypeToConfirmForm for Everything {}
impl ::rmcp_guard::__private::FormDerived for Everything {}
impl ::rmcp_guard::Form for Everything {
    const SPEC: &'static ::rmcp_guard::form::FormSpec = &::rmcp_guard::form::FormSpec {
        name: "Everything",
        fields: &[
            ::rmcp_guard::form::FieldSpec {
                name: "confirm",
                title: ::core::option::Option::Some("I understand"),
                description: ::core::option::Option::Some("Tick to confirm."),
                kind: ::rmcp_guard::form::FieldKind::Boolean,
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Bool(false),
                ),
                role: ::rmcp_guard::form::FieldRole::Checkbox,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "typed_name",
                title: ::core::option::Option::Some("Type the name"),
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
                    format: ::core::option::Option::None,
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::ConfirmText,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "reason",
                title: ::core::option::Option::Some("Reason"),
                description: ::core::option::Option::Some("Why this is needed"),
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::Some(1u32),
                    max_length: ::core::option::Option::Some(500u32),
                    format: ::core::option::Option::None,
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: true,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "contact",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
                    format: ::core::option::Option::Some(
                        ::rmcp_guard::form::Format::Email,
                    ),
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "ticket_url",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
                    format: ::core::option::Option::Some(::rmcp_guard::form::Format::Uri),
                },
                optional: true,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "day",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
                    format: ::core::option::Option::Some(
                        ::rmcp_guard::form::Format::Date,
                    ),
                },
                optional: true,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "at",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
                    format: ::core::option::Option::Some(
                        ::rmcp_guard::form::Format::DateTime,
                    ),
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Str("2030-01-01T00:00:00Z"),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "notify",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Boolean,
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Bool(true),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "maybe",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Boolean,
                optional: true,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "offset",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::Some(-10i64),
                    maximum: ::core::option::Option::Some(10i64),
                    type_min: i8::MIN as i128,
                    type_max: i8::MAX as i128,
                    rust_type: "i8",
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Int(-3i64),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "a",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: i16::MIN as i128,
                    type_max: i16::MAX as i128,
                    rust_type: "i16",
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "b",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: i32::MIN as i128,
                    type_max: i32::MAX as i128,
                    rust_type: "i32",
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "c",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: i64::MIN as i128,
                    type_max: i64::MAX as i128,
                    rust_type: "i64",
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "d",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: isize::MIN as i128,
                    type_max: isize::MAX as i128,
                    rust_type: "isize",
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "keep_days",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::Some(1i64),
                    maximum: ::core::option::Option::Some(30i64),
                    type_min: u8::MIN as i128,
                    type_max: u8::MAX as i128,
                    rust_type: "u8",
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Int(7i64),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "e",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: u16::MIN as i128,
                    type_max: u16::MAX as i128,
                    rust_type: "u16",
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "f",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: u32::MIN as i128,
                    type_max: u32::MAX as i128,
                    rust_type: "u32",
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "g",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: u64::MIN as i128,
                    type_max: u64::MAX as i128,
                    rust_type: "u64",
                },
                optional: true,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "h",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                    type_min: usize::MIN as i128,
                    type_max: usize::MAX as i128,
                    rust_type: "usize",
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "ratio",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Number {
                    minimum: ::core::option::Option::Some(0.5f64),
                    maximum: ::core::option::Option::Some(99.5f64),
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Num(1.5f64),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "weight",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Number {
                    minimum: ::core::option::Option::Some(-1f64),
                    maximum: ::core::option::Option::None,
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Num(0f64),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "threshold",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Number {
                    minimum: ::core::option::Option::None,
                    maximum: ::core::option::Option::None,
                },
                optional: true,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "region",
                title: ::core::option::Option::Some("Region"),
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Enum {
                    values: <Region as ::rmcp_guard::form::Choice>::VALUES,
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Str("us_east"),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "fallback_region",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Enum {
                    values: <Option<Region> as ::rmcp_guard::form::Choice>::VALUES,
                },
                optional: true,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
        ],
        fallback: false,
    };
    fn from_valid(
        content: &::rmcp_guard::__private::serde_json::Map<
            ::std::string::String,
            ::rmcp_guard::__private::serde_json::Value,
        >,
    ) -> ::core::result::Result<Self, ::std::string::String> {
        let fields = <Self as ::rmcp_guard::Form>::SPEC.fields;
        ::core::result::Result::Ok(Self {
            confirm: <bool as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("confirm"),
                &fields[0usize],
            )?,
            typed_name: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("typed_name"),
                &fields[1usize],
            )?,
            reason: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("reason"),
                &fields[2usize],
            )?,
            contact: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("contact"),
                &fields[3usize],
            )?,
            ticket_url: <Option<
                String,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("ticket_url"),
                &fields[4usize],
            )?,
            day: <Option<
                String,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("day"),
                &fields[5usize],
            )?,
            at: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("at"),
                &fields[6usize],
            )?,
            notify: <bool as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("notify"),
                &fields[7usize],
            )?,
            maybe: <Option<
                bool,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("maybe"),
                &fields[8usize],
            )?,
            offset: <i8 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("offset"),
                &fields[9usize],
            )?,
            a: <i16 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("a"),
                &fields[10usize],
            )?,
            b: <i32 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("b"),
                &fields[11usize],
            )?,
            c: <i64 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("c"),
                &fields[12usize],
            )?,
            d: <isize as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("d"),
                &fields[13usize],
            )?,
            keep_days: <u8 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("keep_days"),
                &fields[14usize],
            )?,
            e: <u16 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("e"),
                &fields[15usize],
            )?,
            f: <u32 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("f"),
                &fields[16usize],
            )?,
            g: <Option<
                u64,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("g"),
                &fields[17usize],
            )?,
            h: <usize as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("h"),
                &fields[18usize],
            )?,
            ratio: <f64 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("ratio"),
                &fields[19usize],
            )?,
            weight: <f32 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("weight"),
                &fields[20usize],
            )?,
            threshold: <Option<
                f64,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("threshold"),
                &fields[21usize],
            )?,
            region: <Region as ::rmcp_guard::form::Choice>::from_choice(
                content.get("region"),
                &fields[22usize],
            )?,
            fallback_region: <Option<
                Region,
            > as ::rmcp_guard::form::Choice>::from_choice(
                content.get("fallback_region"),
                &fields[23usize],
            )?,
        })
    }
    fn to_content(
        &self,
    ) -> ::rmcp_guard::__private::serde_json::Map<
        ::std::string::String,
        ::rmcp_guard::__private::serde_json::Value,
    > {
        let mut content = ::rmcp_guard::__private::serde_json::Map::new();
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("confirm"),
                <bool as ::rmcp_guard::form::FieldValue>::to_json(&self.confirm),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<
                    &str,
                >>::from("typed_name"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.typed_name),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("reason"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.reason),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("contact"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.contact),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<
                    &str,
                >>::from("ticket_url"),
                <Option<
                    String,
                > as ::rmcp_guard::form::FieldValue>::to_json(&self.ticket_url),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("day"),
                <Option<String> as ::rmcp_guard::form::FieldValue>::to_json(&self.day),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("at"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.at),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("notify"),
                <bool as ::rmcp_guard::form::FieldValue>::to_json(&self.notify),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("maybe"),
                <Option<bool> as ::rmcp_guard::form::FieldValue>::to_json(&self.maybe),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("offset"),
                <i8 as ::rmcp_guard::form::FieldValue>::to_json(&self.offset),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("a"),
                <i16 as ::rmcp_guard::form::FieldValue>::to_json(&self.a),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("b"),
                <i32 as ::rmcp_guard::form::FieldValue>::to_json(&self.b),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("c"),
                <i64 as ::rmcp_guard::form::FieldValue>::to_json(&self.c),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("d"),
                <isize as ::rmcp_guard::form::FieldValue>::to_json(&self.d),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<
                    &str,
                >>::from("keep_days"),
                <u8 as ::rmcp_guard::form::FieldValue>::to_json(&self.keep_days),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("e"),
                <u16 as ::rmcp_guard::form::FieldValue>::to_json(&self.e),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("f"),
                <u32 as ::rmcp_guard::form::FieldValue>::to_json(&self.f),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("g"),
                <Option<u64> as ::rmcp_guard::form::FieldValue>::to_json(&self.g),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("h"),
                <usize as ::rmcp_guard::form::FieldValue>::to_json(&self.h),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("ratio"),
                <f64 as ::rmcp_guard::form::FieldValue>::to_json(&self.ratio),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("weight"),
                <f32 as ::rmcp_guard::form::FieldValue>::to_json(&self.weight),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<
                    &str,
                >>::from("threshold"),
                <Option<f64> as ::rmcp_guard::form::FieldValue>::to_json(&self.threshold),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("region"),
                <Region as ::rmcp_guard::form::Choice>::choice_json(&self.region),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<
                    &str,
                >>::from("fallback_region"),
                <Option<
                    Region,
                > as ::rmcp_guard::form::Choice>::choice_json(&self.fallback_region),
            );
        content
    }
    fn requested_schema() -> ::rmcp_guard::__private::rmcp::model::ElicitationSchema {
        static SCHEMA: ::std::sync::OnceLock<
            ::rmcp_guard::__private::rmcp::model::ElicitationSchema,
        > = ::std::sync::OnceLock::new();
        ::core::clone::Clone::clone(
            SCHEMA.get_or_init(|| <Self as ::rmcp_guard::Form>::SPEC.requested_schema()),
        )
    }
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
    assert!(has_roles::< Everything > ());
    assert_eq!(Everything::SPEC.fields.len(), 24);
    let confirm = field("confirm");
    assert_eq!(confirm.role, FieldRole::Checkbox);
    assert_eq!(confirm.description, Some("Tick to confirm."));
    assert!(matches!(confirm.default, Some(DefaultValue::Bool(false))));
    assert_eq!(field("typed_name").role, FieldRole::ConfirmText);
    let reason = field("reason");
    assert_eq!(reason.description, Some("Why this is needed"));
    assert!(
        matches!(reason.kind, FieldKind::String { min_length : Some(1), max_length :
        Some(500), format : None })
    );
    for (name, format) in [
        ("contact", Format::Email),
        ("ticket_url", Format::Uri),
        ("day", Format::Date),
        ("at", Format::DateTime),
    ] {
        assert!(
            matches!(field(name).kind, FieldKind::String { format : Some(f), .. } if f ==
            format), "{name}"
        );
    }
    assert!(field("ticket_url").optional);
    assert!(! field("contact").optional);
    assert!(
        matches!(field("offset").kind, FieldKind::Integer { minimum : Some(- 10), maximum
        : Some(10), type_min : - 128, type_max : 127, .. })
    );
    assert!(matches!(field("offset").default, Some(DefaultValue::Int(- 3))));
    assert!(matches!(field("h").kind, FieldKind::Integer { rust_type : "usize", .. }));
    assert!(
        matches!(field("ratio").kind, FieldKind::Number { minimum : Some(0.5), maximum :
        Some(99.5) })
    );
    assert!(matches!(field("ratio").default, Some(DefaultValue::Num(1.5))));
    assert!(matches!(field("weight").default, Some(DefaultValue::Num(0.0))));
    assert!(matches!(field("maybe").kind, FieldKind::Boolean));
    let FieldKind::Enum { values } = field("region").kind else {
        panic!("region is a choice");
    };
    assert_eq!(values, Region::VALUES);
    assert_eq!(values[0].value, "eu");
    assert_eq!(values[0].title, Some("Europe"));
    assert_eq!(values[1].value, "us_east");
    assert!(matches!(field("region").default, Some(DefaultValue::Str("us_east"))));
    assert!(field("fallback_region").optional);
}
