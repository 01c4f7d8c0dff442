// guard checks every name serde accepts: for each case style, rename form and alias, the
// names serde_derive lists for deserializing (aliases included) and the keys it serializes
// are all among the names the derive checked.

use rmcp_guard::__private::ToolArgsDerived;
use rmcp_guard::ToolArgs;
use schemars::JsonSchema;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// Carries the field names serde_derive hands to `deserialize_struct`.
#[derive(Debug)]
struct Captured(&'static [&'static str]);

impl std::fmt::Display for Captured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Captured {}

impl de::Error for Captured {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Captured(&[])
    }
}

struct Probe;

impl<'de> Deserializer<'de> for Probe {
    type Error = Captured;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Captured> {
        Err(Captured(&[]))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Captured> {
        Err(Captured(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

fn assert_guard_sees_what_serde_sees<T>(value: T)
where
    T: for<'de> Deserialize<'de> + Serialize + ToolArgs + ToolArgsDerived,
{
    let accepted = match T::deserialize(Probe) {
        Err(Captured(fields)) => fields,
        Ok(_) => unreachable!("the probe never yields a value"),
    };
    assert!(!accepted.is_empty());
    let serialized = serde_json::to_value(&value).unwrap();
    let sent = serialized.as_object().unwrap().keys().map(String::as_str);
    for name in accepted.iter().copied().chain(sent) {
        assert!(
            T::CHECKED_NAMES.contains(&name),
            "serde uses `{name}` for {}, but guard checked only {:?}",
            std::any::type_name::<T>(),
            T::CHECKED_NAMES
        );
    }
}

macro_rules! styled {
    ($($ty:ident: $style:literal),* $(,)?) => {$(
        #[derive(Default, Serialize, Deserialize, JsonSchema, ToolArgs)]
        #[serde(rename_all = $style)]
        struct $ty {
            very_tasty: u8,
            a: u8,
            z42: u8,
            r#type: u8,
            x_y_z: u8,
            #[serde(rename = "kept")]
            renamed: u8,
        }
    )*};
}

styled!(
    Lower: "lowercase",
    Upper: "UPPERCASE",
    Pascal: "PascalCase",
    Camel: "camelCase",
    Snake: "snake_case",
    ScreamingSnake: "SCREAMING_SNAKE_CASE",
    Kebab: "kebab-case",
    ScreamingKebab: "SCREAMING-KEBAB-CASE",
);

#[derive(Default, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all(serialize = "PascalCase", deserialize = "SCREAMING-KEBAB-CASE"))]
struct SplitStyles {
    very_tasty: u8,
    r#type: u8,
}

#[derive(Default, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all(deserialize = "camelCase"))]
struct DeserializeStyleOnly {
    very_tasty: u8,
}

#[derive(Default, Serialize, Deserialize, JsonSchema, ToolArgs)]
struct Renames {
    #[serde(rename(serialize = "outName", deserialize = "in-name"))]
    both: u8,
    #[serde(rename(deserialize = "only_in"))]
    in_only: u8,
    #[serde(rename(serialize = "only_out"))]
    out_only: u8,
    #[serde(alias = "second", alias = "third")]
    first: u8,
    #[serde(rename = "r#raw")]
    raw_text: u8,
}

fn main() {
    assert_guard_sees_what_serde_sees(Lower::default());
    assert_guard_sees_what_serde_sees(Upper::default());
    assert_guard_sees_what_serde_sees(Pascal::default());
    assert_guard_sees_what_serde_sees(Camel::default());
    assert_guard_sees_what_serde_sees(Snake::default());
    assert_guard_sees_what_serde_sees(ScreamingSnake::default());
    assert_guard_sees_what_serde_sees(Kebab::default());
    assert_guard_sees_what_serde_sees(ScreamingKebab::default());
    assert_guard_sees_what_serde_sees(SplitStyles::default());
    assert_guard_sees_what_serde_sees(DeserializeStyleOnly::default());
    assert_guard_sees_what_serde_sees(Renames::default());
    // The raw identifier is `type` on the wire, and that is the name guard checked.
    assert!(Snake::CHECKED_NAMES.contains(&"type"));
    assert!(!Snake::CHECKED_NAMES.iter().any(|n| n.starts_with("r#")));
    assert!(Pascal::CHECKED_NAMES.contains(&"VeryTasty"));
    assert!(ScreamingKebab::CHECKED_NAMES.contains(&"VERY-TASTY"));
}
