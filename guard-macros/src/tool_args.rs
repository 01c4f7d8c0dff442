//! `#[derive(ToolArgs)]`: model-visible arguments that carry neither consent nor identity.
//!
//! The derive reads each field's names the way serde_derive does (the field's name without
//! `r#`, `rename`, `rename(serialize, deserialize)`, every `alias`, the container's
//! `rename_all` in every case style serde knows) and `#[schemars(rename)]`, which only
//! changes what the schema tells the model; then refuses any of them that the table in
//! `names` reads as consent or identity. A serde attribute it cannot read is an error, never
//! skipped. Field types are checked by trait bound (`ToolArgField`), so a nested struct must
//! derive `ToolArgs` too and a map cannot smuggle in names.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{
    Attribute, Data, DeriveInput, Fields, LitStr, Token, Type, ext::IdentExt,
    meta::ParseNestedMeta, spanned::Spanned,
};

use crate::{
    ctxt::Ctxt,
    names::{self, Class},
};

pub fn derive(input: DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let parsed = parse(&cx, &input);
    if let Some(parsed) = &parsed {
        check(&cx, parsed);
    }
    // The impls are emitted either way: on error, uses of the type report nothing more.
    let expanded = expand(&input, parsed.as_ref());
    cx.finish(|| expanded.clone(), || expanded.clone())
}

// ---------------------------------------------------------------------------------------
// Parsing: every name serde gives a field.

/// serde's `rename_all` case styles, applied to a field the way serde_derive does.
#[derive(Clone, Copy)]
enum Rule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

const RULES: &[(&str, Rule)] = &[
    ("lowercase", Rule::Lower),
    ("UPPERCASE", Rule::Upper),
    ("PascalCase", Rule::Pascal),
    ("camelCase", Rule::Camel),
    ("snake_case", Rule::Snake),
    ("SCREAMING_SNAKE_CASE", Rule::ScreamingSnake),
    ("kebab-case", Rule::Kebab),
    ("SCREAMING-KEBAB-CASE", Rule::ScreamingKebab),
];

impl Rule {
    fn parse(lit: &LitStr) -> syn::Result<(Rule, String)> {
        let value = lit.value();
        RULES
            .iter()
            .find(|(name, _)| *name == value)
            .map(|(name, rule)| (*rule, (*name).to_owned()))
            .ok_or_else(|| {
                let valid: Vec<String> = RULES.iter().map(|(n, _)| format!("\"{n}\"")).collect();
                syn::Error::new(
                    lit.span(),
                    format!(
                        "unknown case style `rename_all = \"{value}\"`; serde knows: {}",
                        valid.join(", ")
                    ),
                )
            })
    }

    /// serde_derive's `RenameRule::apply_to_field`: field names are snake case, so
    /// `lowercase` and `snake_case` leave them as they are.
    fn apply(self, field: &str) -> String {
        match self {
            Rule::Lower | Rule::Snake => field.to_owned(),
            Rule::Upper | Rule::ScreamingSnake => field.to_ascii_uppercase(),
            Rule::Pascal => {
                let mut pascal = String::new();
                let mut capitalize = true;
                for c in field.chars() {
                    if c == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(c.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(c);
                    }
                }
                pascal
            }
            Rule::Camel => {
                let pascal = Rule::Pascal.apply(field);
                let mut chars = pascal.chars();
                chars
                    .next()
                    .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            }
            Rule::Kebab => field.replace('_', "-"),
            Rule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

/// Where a wire name comes from, for the error message.
#[derive(Clone)]
enum Origin {
    /// The field's own name.
    Field,
    /// The field's name under the container's `rename_all = "..."`.
    RenameAll(String),
    /// A string in a serde or schemars attribute (`rename`, `alias`, `tag`, ...).
    Attribute,
}

#[derive(Clone)]
struct WireName {
    text: String,
    span: Span,
    origin: Origin,
}

/// Which attribute a list came from: serde decides the wire, schemars only the schema.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    Serde,
    Schemars,
}

impl Source {
    fn of(attr: &Attribute) -> Option<Source> {
        if attr.path().is_ident("serde") {
            Some(Source::Serde)
        } else if attr.path().is_ident("schemars") {
            Some(Source::Schemars)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Source::Serde => "serde",
            Source::Schemars => "schemars",
        }
    }
}

/// Runs `f` on every item of every `#[serde(...)]` and `#[schemars(...)]` attribute. An
/// attribute that does not parse is reported, never skipped.
fn each_item(
    cx: &Ctxt,
    attrs: &[Attribute],
    mut f: impl FnMut(&ParseNestedMeta, Source, &str) -> syn::Result<()>,
) {
    for attr in attrs {
        let Some(source) = Source::of(attr) else {
            continue;
        };
        let result = attr.parse_nested_meta(|meta| {
            let key = match meta.path.get_ident() {
                Some(ident) => ident.unraw().to_string(),
                None => {
                    return Err(meta.error(format!(
                        "expected a `{}` option name, not a path",
                        source.name()
                    )));
                }
            };
            f(&meta, source, &key)
        });
        if let Err(e) = result {
            cx.push(syn::Error::new(
                e.span(),
                format!(
                    "guard cannot read this `#[{source}(...)]` attribute ({e}), so it cannot tell which argument names the model may send; write it as {source} documents it",
                    source = source.name()
                ),
            ));
        }
    }
}

/// Consumes an item guard does not need: `key`, `key = value` or `key(...)`.
fn skip_item(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::TokenTree>()?;
    }
    Ok(())
}

/// `key = "name"` or `key(serialize = "a", deserialize = "b")`: every string given, each
/// with whether serde reads it when it deserializes.
fn names_of(meta: &ParseNestedMeta) -> syn::Result<Vec<(LitStr, bool)>> {
    if meta.input.peek(Token![=]) {
        return Ok(vec![(meta.value()?.parse()?, true)]);
    }
    let mut out = Vec::new();
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("serialize") || inner.path.is_ident("deserialize") {
            out.push((inner.value()?.parse()?, inner.path.is_ident("deserialize")));
            Ok(())
        } else {
            Err(inner.error("expected `serialize = \"...\"` or `deserialize = \"...\"`"))
        }
    })?;
    Ok(out)
}

/// What the container's attributes say about names.
#[derive(Default)]
struct Container {
    rules: Vec<(Rule, String)>,
    /// The case style serde reads fields in, if `rename_all` gives one for deserializing.
    read_rule: Option<Rule>,
    /// `#[serde(transparent)]`: the arguments are the one field's own.
    transparent: bool,
    /// `#[serde(default)]` on the container: every field may be left out.
    default: bool,
    /// `tag = "..."` and `content = "..."`: names the model sends next to the fields.
    names: Vec<WireName>,
}

const CONTAINER_KEYS: &[&str] = &[
    "rename",
    "rename_all",
    "rename_all_fields",
    "deny_unknown_fields",
    "tag",
    "content",
    "untagged",
    "bound",
    "default",
    "transparent",
    "into",
    "crate",
    "expecting",
    "variant_identifier",
    "field_identifier",
];

fn parse_container(cx: &Ctxt, input: &DeriveInput) -> Container {
    let mut container = Container::default();
    each_item(cx, &input.attrs, |meta, source, key| match key {
        "rename_all" => {
            for (lit, read) in names_of(meta)? {
                match Rule::parse(&lit) {
                    Ok(rule) => {
                        if read && source == Source::Serde {
                            container.read_rule = Some(rule.0);
                        }
                        container.rules.push(rule);
                    }
                    Err(e) => cx.push(e),
                }
            }
            Ok(())
        }
        "transparent" if source == Source::Serde => {
            container.transparent = true;
            skip_item(meta)
        }
        "tag" | "content" => {
            let lit: LitStr = meta.value()?.parse()?;
            container.names.push(WireName {
                text: lit.value(),
                span: lit.span(),
                origin: Origin::Attribute,
            });
            Ok(())
        }
        "default" if source == Source::Serde => {
            container.default = true;
            skip_item(meta)
        }
        "from" | "try_from" | "remote" if source == Source::Serde => {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "a guarded tool's arguments cannot use `#[serde({key} = ...)]`: the model's arguments would be read as another type whose names guard does not see. Derive `ToolArgs` on that type and take it directly"
                ),
            );
            skip_item(meta)
        }
        _ if source == Source::Serde && !CONTAINER_KEYS.contains(&key) => {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "guard does not know `#[serde({key})]` on an arguments type, so it cannot tell whether it changes the names the model may send; it reads: {}",
                    CONTAINER_KEYS.join(", ")
                ),
            );
            skip_item(meta)
        }
        _ => skip_item(meta),
    });
    container
}

struct ArgField<'a> {
    /// The field's Rust name, as `target = ...` and `key = ...` name it.
    ident: String,
    /// The name serde reads it under (its `rename`, or its name in the container's case
    /// style), as a refusal of an unknown argument lists it.
    read_as: String,
    ty: &'a Type,
    names: Vec<WireName>,
    /// Refused already; its type is not checked too, so one mistake is one error.
    flatten: bool,
    /// serde fills it in when the model leaves it out (`default` here or on the container).
    defaulted: bool,
    /// The model cannot send it (`skip`, `skip_deserializing`): its names are not checked.
    skipped: bool,
    /// Left out when the arguments are serialized (`skip`, `skip_serializing`,
    /// `skip_serializing_if`), so a hash of the serialized arguments does not cover it.
    unhashed: bool,
}

const FIELD_KEYS: &[&str] = &[
    "rename",
    "alias",
    "default",
    "skip",
    "skip_serializing",
    "skip_deserializing",
    "skip_serializing_if",
    "serialize_with",
    "deserialize_with",
    "with",
    "borrow",
    "bound",
    "getter",
];

/// A field's wire names and what serde does with it.
fn parse_field<'a>(
    cx: &Ctxt,
    container: &Container,
    field: &'a syn::Field,
) -> Option<ArgField<'a>> {
    let ident = field.ident.as_ref()?;
    let own = ident.unraw().to_string();
    let mut names = vec![WireName {
        text: own.clone(),
        span: ident.span(),
        origin: Origin::Field,
    }];
    for (rule, style) in &container.rules {
        names.push(WireName {
            text: rule.apply(&own),
            span: ident.span(),
            origin: Origin::RenameAll(style.clone()),
        });
    }
    let mut renamed = None;
    let mut skipped = false;
    let mut flatten = false;
    let mut defaulted = container.default;
    let mut unhashed = false;
    each_item(cx, &field.attrs, |meta, source, key| match key {
        "rename" | "alias" => {
            for (lit, read) in names_of(meta)? {
                if key == "rename" && read && source == Source::Serde {
                    renamed = Some(lit.value());
                }
                names.push(WireName {
                    text: lit.value(),
                    span: lit.span(),
                    origin: Origin::Attribute,
                });
            }
            Ok(())
        }
        "flatten" => {
            flatten = true;
            cx.error_spanned_by(
                &meta.path,
                "a guarded tool's arguments cannot use `#[serde(flatten)]`: guard must see every name the model can fill in; list the fields directly",
            );
            skip_item(meta)
        }
        "skip" | "skip_deserializing" if source == Source::Serde => {
            skipped = true;
            unhashed |= key == "skip";
            Ok(())
        }
        "skip_serializing" | "skip_serializing_if" if source == Source::Serde => {
            unhashed = true;
            skip_item(meta)
        }
        "default" if source == Source::Serde => {
            defaulted = true;
            skip_item(meta)
        }
        _ if source == Source::Serde && !FIELD_KEYS.contains(&key) => {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "guard does not know `#[serde({key})]` on an argument, so it cannot tell whether it changes the names the model may send; it reads: {}",
                    FIELD_KEYS.join(", ")
                ),
            );
            skip_item(meta)
        }
        _ => skip_item(meta),
    });
    let read_as = renamed.unwrap_or_else(|| match container.read_rule {
        Some(rule) => rule.apply(&own),
        None => own.clone(),
    });
    Some(ArgField {
        read_as,
        ident: own,
        ty: &field.ty,
        names,
        flatten,
        defaulted,
        skipped,
        unhashed,
    })
}

struct Parsed<'a> {
    container: Container,
    fields: Vec<ArgField<'a>>,
}

fn parse<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Parsed<'a>> {
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "tool arguments cannot be generic: guard checks the concrete type of every field; use concrete types",
        );
    }
    let container = parse_container(cx, input);
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named
                .named
                .iter()
                .filter_map(|f| parse_field(cx, &container, f))
                .collect(),
            Fields::Unit => Vec::new(),
            Fields::Unnamed(_) => {
                cx.error_spanned_by(
                    &data.fields,
                    "tool arguments need named fields: the names are what the model fills in, and what guard checks",
                );
                return None;
            }
        },
        Data::Enum(data) => {
            for variant in data.variants.iter().filter(|v| !v.fields.is_empty()) {
                cx.error_spanned_by(
                    variant,
                    format!(
                        "variant `{}` carries data: `ToolArgs` on an enum takes unit variants only, a choice the model picks by value. Put the data in named fields of an arguments struct",
                        variant.ident
                    ),
                );
            }
            Vec::new()
        }
        Data::Union(_) => {
            cx.error_spanned_by(
                &input.ident,
                "`ToolArgs` derives on a struct of named arguments or a unit-only enum, so guard can check every name the model fills in",
            );
            return None;
        }
    };
    Some(Parsed { container, fields })
}

// ---------------------------------------------------------------------------------------
// Checks.

fn check(cx: &Ctxt, parsed: &Parsed) {
    for name in &parsed.container.names {
        check_names(cx, std::slice::from_ref(name));
    }
    for field in parsed.fields.iter().filter(|f| !f.skipped) {
        check_names(cx, &field.names);
    }
}

/// One error per spelling written in the source; names a field gets from its own name or a
/// case style share the field's span, so the first of those that matches stands for all.
fn check_names(cx: &Ctxt, wire_names: &[WireName]) {
    let mut reported_at_field = false;
    for name in wire_names {
        let at_field = !matches!(name.origin, Origin::Attribute);
        if at_field && reported_at_field {
            continue;
        }
        let refused = refusal(name);
        if let Some(message) = refused {
            cx.push(syn::Error::new(name.span, message));
            reported_at_field |= at_field;
        }
    }
}

fn refusal(name: &WireName) -> Option<String> {
    let text = &name.text;
    if let Some(c) = names::non_ascii(text) {
        return Some(format!(
            "argument name `{}` contains {c:?} (U+{:04X}), which is not ASCII: guard compares argument names in ASCII so a look-alike letter or an invisible character cannot disguise a consent flag or an identity. Use ASCII letters, digits, `_` or `-`",
            text.escape_default(),
            c as u32
        ));
    }
    let shown = shown(name);
    if names::find(text, Class::Consent).is_some() {
        return Some(format!(
            "argument {shown} lets the model claim the human's consent, and a value the model fills in proves nothing. Remove it: `#[destructive]` asks the human through elicitation and hands the handler a `Confirmed<_>` proof"
        ));
    }
    if names::find(text, Class::Identity).is_some() {
        return Some(format!(
            "argument {shown} lets the model choose who is acting; identity must come from trusted context (the server's environment for stdio, a verified bearer token over HTTP), never from tool arguments. Remove it: a `#[prepare]` tool reads the caller from `prepare.caller()`, other tools from an `IdentityProvider`"
        ));
    }
    None
}

/// `` `userId` (read as `user_id`) ``, and which case style produced it.
fn shown(name: &WireName) -> String {
    let mut shown = format!("`{}`", name.text);
    if let Origin::RenameAll(style) = &name.origin {
        shown.push_str(&format!(" (its name under `rename_all = \"{style}\"`)"));
    }
    let spelled = names::spelled(&name.text);
    if spelled != name.text {
        shown.push_str(&format!(" (read as `{spelled}`)"));
    }
    shown
}

// ---------------------------------------------------------------------------------------
// Expansion.

fn expand(input: &DeriveInput, parsed: Option<&Parsed>) -> TokenStream {
    let rt = crate::krate::path(None);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut checked: Vec<String> = Vec::new();
    let mut asserts = Vec::new();
    let idents = |keep: fn(&ArgField) -> bool| -> Vec<String> {
        parsed
            .iter()
            .flat_map(|p| &p.fields)
            .filter(|f| keep(f))
            .map(|f| f.ident.clone())
            .collect()
    };
    let defaulted = idents(|f| f.defaulted);
    let skipped = idents(|f| f.skipped);
    let unhashed = idents(|f| f.unhashed);
    let fields = fields(parsed, &rt);
    if let Some(parsed) = parsed {
        let all = parsed.container.names.iter().chain(
            parsed
                .fields
                .iter()
                .filter(|f| !f.skipped)
                .flat_map(|f| &f.names),
        );
        for name in all {
            if !checked.contains(&name.text) {
                checked.push(name.text.clone());
            }
        }
        if input.generics.params.is_empty() {
            asserts = parsed
                .fields
                .iter()
                .filter(|f| !f.flatten && !f.skipped)
                .map(|f| {
                    let ty = f.ty;
                    let at_ty = crate::krate::respan(rt.clone(), ty.span());
                    quote_spanned!(ty.span()=> #at_ty::__private::assert_tool_arg_field::<#ty>();)
                })
                .collect();
        }
    }
    quote! {
        impl #impl_generics #rt::__private::ToolArgsDerived for #ident #ty_generics #where_clause {
            const CHECKED_NAMES: &'static [&'static str] = &[#(#checked),*];
            const DEFAULTED: &'static [&'static str] = &[#(#defaulted),*];
            const SKIPPED: &'static [&'static str] = &[#(#skipped),*];
            const UNHASHED: &'static [&'static str] = &[#(#unhashed),*];
            const FIELDS: &'static [&'static str] = #fields;
        }
        impl #impl_generics #rt::ToolArgs for #ident #ty_generics #where_clause {}
        impl #impl_generics #rt::__private::ToolArgField for #ident #ty_generics #where_clause {}
        const _: () = {
            #(#asserts)*
        };
    }
}

/// The name serde reads for each field the model can send; a transparent container's are
/// its one field's.
fn fields(parsed: Option<&Parsed>, rt: &TokenStream) -> TokenStream {
    let sent = parsed.iter().flat_map(|p| &p.fields).filter(|f| !f.skipped);
    match parsed {
        Some(p) if p.container.transparent => match sent.map(|f| f.ty).next() {
            Some(ty) => quote!(<#ty as #rt::__private::ToolArgsDerived>::FIELDS),
            None => quote!(&[]),
        },
        _ => {
            let names = sent.map(|f| &f.read_as);
            quote!(&[#(#names),*])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_styles_match_serde() {
        // serde_derive's own expectations for `apply_to_field`.
        let cases: &[(&str, [&str; 8])] = &[
            (
                "outcome",
                [
                    "outcome", "OUTCOME", "Outcome", "outcome", "outcome", "OUTCOME", "outcome",
                    "OUTCOME",
                ],
            ),
            (
                "very_tasty",
                [
                    "very_tasty",
                    "VERY_TASTY",
                    "VeryTasty",
                    "veryTasty",
                    "very_tasty",
                    "VERY_TASTY",
                    "very-tasty",
                    "VERY-TASTY",
                ],
            ),
            ("a", ["a", "A", "A", "a", "a", "A", "a", "A"]),
            (
                "z42",
                ["z42", "Z42", "Z42", "z42", "z42", "Z42", "z42", "Z42"],
            ),
        ];
        for (field, expected) in cases {
            for ((style, rule), want) in RULES.iter().zip(expected) {
                assert_eq!(rule.apply(field), *want, "{style} of {field}");
            }
        }
    }

    #[test]
    fn unknown_case_style_lists_serde_styles() {
        let lit = LitStr::new("camelcase", Span::call_site());
        let err = Rule::parse(&lit).err().expect("not a serde style");
        assert!(err.to_string().contains("\"camelCase\""), "{err}");
    }
}
