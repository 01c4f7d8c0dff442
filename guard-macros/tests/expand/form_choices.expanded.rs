use rmcp_guard::form::FieldKind;
use rmcp_guard::{Form, FormEnum};
#[derive(Debug, FormEnum)]
enum Colour {
    #[form(title = "Red")]
    Red,
    Green,
}
impl ::rmcp_guard::__private::FormEnumDerived for Colour {}
impl ::rmcp_guard::FormEnum for Colour {
    const VALUES: &'static [::rmcp_guard::form::EnumValue] = &[
        ::rmcp_guard::form::EnumValue {
            value: "red",
            title: ::core::option::Option::Some("Red"),
        },
        ::rmcp_guard::form::EnumValue {
            value: "green",
            title: ::core::option::Option::None,
        },
    ];
    fn from_wire(value: &str) -> ::core::option::Option<Self> {
        match value {
            "red" => ::core::option::Option::Some(Self::Red),
            "green" => ::core::option::Option::Some(Self::Green),
            _ => ::core::option::Option::None,
        }
    }
    fn as_wire(&self) -> &'static str {
        match self {
            Self::Red => "red",
            Self::Green => "green",
        }
    }
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
const _: () = if !::rmcp_guard::__private::offers(
    <Colour as ::rmcp_guard::form::Choice>::VALUES,
    "green",
) {
    ::core::panic!(
        "`default = \"green\"` is not one of the choices of form field `legacy`, so the human would be shown a default they cannot pick. Write the wire value of one of its variants: the variant's name in snake_case, or its `#[form(value = \"...\")]`"
    )
};
impl ::rmcp_guard::__private::FormDerived for Palette {}
impl ::rmcp_guard::Form for Palette {
    const SPEC: &'static ::rmcp_guard::form::FormSpec = &::rmcp_guard::form::FormSpec {
        name: "Palette",
        fields: &[
            ::rmcp_guard::form::FieldSpec {
                name: "main",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Enum {
                    values: <Colour as ::rmcp_guard::form::Choice>::VALUES,
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "legacy",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::LegacyEnum {
                    values: <Colour as ::rmcp_guard::form::Choice>::VALUES,
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Str("green"),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "accents",
                title: ::core::option::Option::Some("Accents"),
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::MultiEnum {
                    values: <Vec<Colour> as ::rmcp_guard::form::FieldValue>::CHOICES,
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "extra",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::MultiEnum {
                    values: <Option<
                        Vec<Colour>,
                    > as ::rmcp_guard::form::FieldValue>::CHOICES,
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
            main: <Colour as ::rmcp_guard::form::Choice>::from_choice(
                content.get("main"),
                &fields[0usize],
            )?,
            legacy: <Colour as ::rmcp_guard::form::Choice>::from_choice(
                content.get("legacy"),
                &fields[1usize],
            )?,
            accents: <Vec<
                Colour,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("accents"),
                &fields[2usize],
            )?,
            extra: <Option<
                Vec<Colour>,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("extra"),
                &fields[3usize],
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
                <::std::string::String as ::core::convert::From<&str>>::from("main"),
                <Colour as ::rmcp_guard::form::Choice>::choice_json(&self.main),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("legacy"),
                <Colour as ::rmcp_guard::form::Choice>::choice_json(&self.legacy),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("accents"),
                <Vec<Colour> as ::rmcp_guard::form::FieldValue>::to_json(&self.accents),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("extra"),
                <Option<
                    Vec<Colour>,
                > as ::rmcp_guard::form::FieldValue>::to_json(&self.extra),
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
