//! Compile-time contracts on a guarded tool's model-visible arguments.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::path::PathBuf;

/// A guarded tool's arguments as the call carries them, deserialised by guard rather than
/// by rmcp's `Parameters`: an argument of the wrong shape (a missing field, a wrong type, an
/// unknown field the type denies) then ends the call with guard's `INVALID_INPUT`, a trace
/// id and an audit record, where rmcp would answer with its raw error before guard runs.
/// So does an argument serde would have dropped unread (`path2`, a misspelled `dryrun`,
/// a field's Rust name where serde reads its rename), at any depth: on a tool that
/// destroys, a silently ignored option is an option the model believes it set. A tool
/// whose author opts out (`unknown_arguments = "ignore"`) takes them as serde does.
/// `#[derive(ToolArgs)]` refuses `#[serde(flatten)]`, so every name serde drops is seen.
/// The macros' expansions take it in place of the author's `Parameters<T>`.
#[doc(hidden)]
pub struct GuardArguments<T> {
    parsed: Result<T, String>,
    /// The paths of the arguments serde ignored, as `path2` or `options.dryrun`.
    unknown: Vec<String>,
}

impl<T: ToolArgsDerived> GuardArguments<T> {
    /// The arguments, or what was wrong with them: their shape, or names the tool does not
    /// take.
    pub fn parsed(self) -> Result<T, String> {
        let arguments = self.parsed?;
        if self.unknown.is_empty() {
            return Ok(arguments);
        }
        let quoted = |names: &[&str]| -> String {
            let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            quoted.join(", ")
        };
        let unknown: Vec<&str> = self.unknown.iter().map(String::as_str).collect();
        let takes = match T::FIELDS {
            [] => "no arguments".to_owned(),
            fields => quoted(fields),
        };
        let noun = if unknown.len() == 1 {
            "argument"
        } else {
            "arguments"
        };
        Err(format!(
            "unknown {noun} {} (it takes {takes}; a name it does not take would be ignored, so nothing was read or asked)",
            quoted(&unknown)
        ))
    }

    /// Takes names the tool does not know as serde does, by dropping them: the tool's
    /// `unknown_arguments = "ignore"`.
    pub fn ignoring_unknown(mut self) -> Self {
        self.unknown.clear();
        self
    }
}

impl<S, T: serde::de::DeserializeOwned>
    rmcp::handler::server::common::FromContextPart<
        rmcp::handler::server::tool::ToolCallContext<'_, S>,
    > for GuardArguments<T>
{
    /// Never refuses: the shape is judged by the tool, which audits and answers.
    fn from_context_part(
        context: &mut rmcp::handler::server::tool::ToolCallContext<'_, S>,
    ) -> Result<Self, rmcp::ErrorData> {
        // Read in place: the arguments stay in the context for guard's call record, and
        // nothing is copied to be judged.
        let empty = serde_json::Map::new();
        let given = context.arguments.as_ref().unwrap_or(&empty);
        let mut unknown = Vec::new();
        let parsed = serde_ignored::deserialize(given, |path| unknown.push(spelled(&path)));
        Ok(Self {
            parsed: parsed.map_err(|e| e.to_string()),
            unknown,
        })
    }
}

/// An ignored argument's path as the model wrote it: `options.dryrun`, `items[0].nmae`
/// (serde_ignored's own spelling marks each `Option` with `?`).
fn spelled(path: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", spelled(parent)),
        Path::Map { parent, key } => match spelled(parent) {
            root if root.is_empty() => key.clone(),
            parent => format!("{parent}.{key}"),
        },
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => spelled(parent),
    }
}

/// Arguments the model fills in. `#[derive(ToolArgs)]` rejects, at compile time, fields that
/// would let the model confirm on the human's behalf (`confirmed`, `force`, `skip_prompt`, …)
/// or claim an identity (`user_id`, `tenant`, `owner`, …): identity comes from trusted
/// context, consent from the human.
///
/// The derive reads every name serde accepts for a field (the field's name without `r#`,
/// `rename`, `rename(serialize, deserialize)`, every `alias`, the container's `rename_all`
/// in any case style) and compares them after splitting at case changes, digits and
/// punctuation, so `userID`, `user-id` and `userid` are one name. It refuses
/// `#[serde(flatten)]`, `from`/`try_from`, generic structs and serde attributes it cannot
/// read. Every field's type must be a `ToolArgField`: a scalar, an `Option`, `Vec` or `Box`
/// of one, or another type deriving `ToolArgs`, whose names are checked in turn; a map or a
/// `serde_json::Value` would let the model send any name. A field the model cannot send
/// (`#[serde(skip)]`, `#[serde(skip_deserializing)]`) is not checked. The derive reads serde's
/// derive attributes: a hand-written `Deserialize` impl, or a field's own `deserialize_with`
/// function, reads whatever its author wrote and is the author's to keep honest.
///
/// Implementing it by hand is refused: the derive is the check.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is the argument type of a guarded tool but guard has not checked it",
    label = "missing `#[derive(rmcp_guard::ToolArgs)]`",
    note = "add `#[derive(rmcp_guard::ToolArgs)]` to `{Self}`: it rejects confirmation flags and identity fields, which the model must never supply"
)]
pub trait ToolArgs: ToolArgsDerived {}

/// The seal of [`ToolArgs`] and `ToolArgField`: `#[derive(ToolArgs)]` implements it after
/// its checks. A hand-written impl has to name `rmcp_guard::__private`, which is no API.
#[diagnostic::on_unimplemented(
    message = "`{Self}` implements a guard argument trait by hand, so guard never checked its names",
    label = "derive it with `#[derive(rmcp_guard::ToolArgs)]`",
    note = "remove the hand-written impl and derive it with `#[derive(rmcp_guard::ToolArgs)]`: the derive is what refuses consent flags and identity fields in what the model sends"
)]
pub trait ToolArgsDerived {
    /// Every wire name the derive checked for this type's own fields.
    const CHECKED_NAMES: &'static [&'static str];
    /// The name serde reads for each field the model can send, as a refusal of an unknown
    /// argument lists them.
    const FIELDS: &'static [&'static str] = &[];
    /// Fields serde fills in when the model leaves them out (`#[serde(default)]`).
    const DEFAULTED: &'static [&'static str] = &[];
    /// Fields the model cannot send (`#[serde(skip)]`, `skip_deserializing`).
    const SKIPPED: &'static [&'static str] = &[];
    /// Fields serde leaves out when it serializes the arguments (`skip`,
    /// `skip_serializing`, `skip_serializing_if`).
    const UNHASHED: &'static [&'static str] = &[];
}

/// A type a guarded tool's argument struct may hold: guard knows every name the model can
/// send through it. Scalars name nothing; `Option`, `Box` and the lists (`Vec`, `VecDeque`,
/// `HashSet`, `BTreeSet`) name what their item names; a type deriving `ToolArgs` names its
/// checked fields. Maps, `serde_json::Value` and anything else are refused, by trait bound,
/// so a type alias does not hide one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of a guarded tool's arguments: guard cannot see which names the model would send through it",
    label = "not a checked argument type",
    note = "guard checks every name the model can send: a nested struct must derive `ToolArgs` too, and a map or `serde_json::Value` accepts any name, so the model could slip a consent flag or an identity past the check. List the fields in a struct with `#[derive(rmcp_guard::ToolArgs)]` and use that type here",
    note = "argument fields may be `String`, `bool`, `char`, integers, floats, `PathBuf`, an `Option`, `Box`, `Vec`, `VecDeque`, `HashSet` or `BTreeSet` of those, or a type that derives `ToolArgs` (a struct, or a unit-only enum of choices)"
)]
pub trait ToolArgField: ToolArgsDerived {}

macro_rules! scalar_fields {
    ($($ty:ty),* $(,)?) => {$(
        impl ToolArgsDerived for $ty {
            const CHECKED_NAMES: &'static [&'static str] = &[];
        }
        impl ToolArgField for $ty {}
    )*};
}

scalar_fields!(
    String, bool, char, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64,
    PathBuf,
);

macro_rules! wrapper_fields {
    ($($wrapper:ident),* $(,)?) => {$(
        impl<T: ToolArgField> ToolArgsDerived for $wrapper<T> {
            const CHECKED_NAMES: &'static [&'static str] = T::CHECKED_NAMES;
        }
        impl<T: ToolArgField> ToolArgField for $wrapper<T> {}
    )*};
}

wrapper_fields!(Option, Vec, VecDeque, BTreeSet, Box);

impl<T: ToolArgField, S> ToolArgsDerived for HashSet<T, S> {
    const CHECKED_NAMES: &'static [&'static str] = T::CHECKED_NAMES;
}
impl<T: ToolArgField, S> ToolArgField for HashSet<T, S> {}

/// Pins a field type of a `#[derive(ToolArgs)]` struct to `ToolArgField`, at the field.
pub const fn assert_tool_arg_field<T: ToolArgField>() {}

/// The argument a human retypes for `confirm = "type_to_confirm"`.
#[diagnostic::on_unimplemented(
    message = "the type-to-confirm target must be a string argument, but it is `{Self}`",
    label = "not a `String`",
    note = "point `target = ...` at a `String` field of the tool's arguments: the human retypes that exact text"
)]
pub trait TargetText: target_seal::Sealed {
    /// The text the human must retype: the argument `target = ...` names.
    fn target_text(&self) -> &str;
}

/// Only strings are retyped: a type of one's own cannot choose the text the human must type.
mod target_seal {
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a type-to-confirm target",
        label = "guard compares typed names with `String` arguments only",
        note = "point `target = ...` at a `String` field of the tool's arguments; implementing guard's target trait yourself would let code choose the text the human must type"
    )]
    pub trait Sealed {}
    impl Sealed for String {}
    impl Sealed for &str {}
}

impl TargetText for String {
    fn target_text(&self) -> &str {
        self
    }
}

impl TargetText for &str {
    fn target_text(&self) -> &str {
        self
    }
}
