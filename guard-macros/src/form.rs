//! `#[derive(Form)]`: a flat elicitation form, checked at compile time.

use proc_macro2::TokenStream;
use syn::{
    Data, DeriveInput, Expr, Fields, GenericArgument, Ident, Lit, PathArguments, Type,
    ext::IdentExt,
};

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    krate, names, options,
};

mod expand;

const FLAT_HINT: &str = "elicitation forms must be flat (string, number, integer, boolean, a single-choice enum, or a `Vec` of one for a multi-select) so every client can render them";

/// What a field holds, as read from its declared type.
enum Kind {
    String,
    Bool,
    Integer(&'static str),
    Number,
    /// Any other plain path: must be a `FormEnum`, checked by the trait system.
    Enum,
    /// `Vec<E>` of any other plain path: a multi-select, `E` checked to be a `FormEnum`.
    Multi,
}

const INTEGERS: &[&str] = &[
    "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize",
];

struct Field {
    ident: Ident,
    ty: Type,
    kind: Kind,
    optional: bool,
    title: Option<String>,
    description: Option<String>,
    min_length: Option<u32>,
    max_length: Option<u32>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    format: Option<&'static str>,
    default: Option<Lit>,
    checkbox: bool,
    confirm_text: bool,
    /// `#[form(redact)]` or `#[form(redact = false)]`; unset, free text is redacted.
    redact: Option<bool>,
    /// `#[form(enum_names)]`: a single choice in the legacy `enum` + `enumNames` spelling.
    enum_names: bool,
}

pub fn derive(input: DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let fields = parse(&cx, &input);
    if let Some(fields) = &fields {
        check(&cx, fields);
    }
    cx.finish(
        || {
            let fields = fields.expect("parse failures are reported");
            expand::expand(&input.ident, &fields, &krate::path(None))
        },
        || expand::fallback(&input, &krate::path(None)),
    )
}

fn parse(cx: &Ctxt, input: &DeriveInput) -> Option<Vec<Field>> {
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "a form cannot be generic: its schema must be known at compile time; use concrete field types",
        );
    }
    let Data::Struct(data) = &input.data else {
        cx.error_spanned_by(
            &input.ident,
            "`Form` derives only on a struct with named fields; for a single choice use `#[derive(FormEnum)]` on a unit-only enum and make it a field",
        );
        return None;
    };
    let Fields::Named(named) = &data.fields else {
        cx.error_spanned_by(
            &data.fields,
            "a form needs named fields: the names become the form's properties",
        );
        return None;
    };
    Some(
        named
            .named
            .iter()
            .filter_map(|f| parse_field(cx, f))
            .collect(),
    )
}

fn parse_field(cx: &Ctxt, field: &syn::Field) -> Option<Field> {
    let ident = field.ident.clone()?;
    // The wire name: a raw identifier's `r#` is not part of it.
    let name = ident.unraw().to_string();
    let name_refused = names::non_ascii(&name).is_some() || names::is_secret(&name);
    if let Some(c) = names::non_ascii(&name) {
        cx.error_spanned_by(
            &ident,
            format!(
                "form field `{name}` contains {c:?} (U+{:04X}), which is not ASCII: guard checks form field names in ASCII so a look-alike letter cannot disguise a secret. Use ASCII letters, digits and `_`",
                c as u32
            ),
        );
    } else if names::is_secret(&name) {
        let spelled = names::spelled(&name);
        let read_as = if spelled == name {
            String::new()
        } else {
            format!(" (read as `{spelled}`)")
        };
        cx.error_spanned_by(
            &ident,
            format!(
                "form field `{name}`{read_as} looks like a secret; the MCP spec says servers MUST NOT use form-mode elicitation to request sensitive information (passwords, API keys, tokens). Remove it and collect the secret through URL-mode elicitation, where the user enters it on a page you control"
            ),
        );
    }
    let (optional, inner) = match option_inner(&field.ty) {
        Some(inner) => (true, inner),
        None => (false, &field.ty),
    };
    let kind = classify(cx, &name, inner)?;
    let mut out = Field {
        ident,
        ty: field.ty.clone(),
        kind,
        optional,
        title: None,
        description: doc_comment(&field.attrs),
        min_length: None,
        max_length: None,
        minimum: None,
        maximum: None,
        format: None,
        default: None,
        checkbox: false,
        confirm_text: false,
        redact: None,
        enum_names: false,
    };
    // The rules between options hold across all of the field's `#[form(...)]` lists.
    let mut written = Vec::new();
    for a in field.attrs.iter().filter(|a| a.path().is_ident("form")) {
        let tokens = match a.meta.require_list() {
            Ok(list) => list.tokens.clone(),
            Err(e) => {
                cx.push(e);
                continue;
            }
        };
        for opt in options::parse(cx, tokens, &options::FORM_FIELD)
            .into_iter()
            .flatten()
        {
            apply(cx, &mut out, &opt);
            written.push(opt);
        }
    }
    options::check_rules(cx, &options::FORM_FIELD, &written);
    if !name_refused {
        check_secret_text(cx, &name, &out, &field.attrs);
    }
    Some(out)
}

/// The words the human reads next to the field: its title and description (from
/// `#[form(...)]`, the doc comment, or `#[schemars(title/description)]`), checked for
/// secrets as its name is, since a field called `code` titled "Password" asks for one.
fn check_secret_text(cx: &Ctxt, name: &str, f: &Field, attrs: &[syn::Attribute]) {
    let mut texts: Vec<(&str, String)> = Vec::new();
    texts.extend(f.title.clone().map(|t| ("titled", t)));
    texts.extend(f.description.clone().map(|d| ("described as", d)));
    for a in attrs.iter().filter(|a| a.path().is_ident("schemars")) {
        // schemars reports its own malformed attributes; only what reads is checked here.
        let _ = a.parse_nested_meta(|meta| {
            let what = if meta.path.is_ident("title") {
                "titled"
            } else if meta.path.is_ident("description") {
                "described as"
            } else {
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<Expr>()?;
                } else if meta.input.peek(syn::token::Paren) {
                    meta.input.parse::<proc_macro2::TokenTree>()?;
                }
                return Ok(());
            };
            let text: syn::LitStr = meta.value()?.parse()?;
            texts.push((what, text.value()));
            Ok(())
        });
    }
    if let Some((what, text)) = texts.into_iter().find(|(_, text)| names::is_secret(text)) {
        cx.error_spanned_by(
            &f.ident,
            format!(
                "form field `{name}` is {what} \"{}\", which asks for a secret; the MCP spec says servers MUST NOT use form-mode elicitation to request sensitive information (passwords, API keys, tokens). Remove it and collect the secret through URL-mode elicitation, where the user enters it on a page you control",
                text.escape_debug()
            ),
        );
    }
}

fn apply(cx: &Ctxt, f: &mut Field, opt: &Opt) {
    match opt.key.to_string().as_str() {
        "title" => f.title = attr::string_value(cx, opt),
        "description" => f.description = attr::string_value(cx, opt),
        "min_length" => f.min_length = int_value(cx, opt),
        "max_length" => f.max_length = int_value(cx, opt),
        "minimum" => f.minimum = number_value(cx, opt),
        "maximum" => f.maximum = number_value(cx, opt),
        "format" => {
            f.format = attr::string_value(cx, opt).and_then(|s| {
                let known = ["email", "uri", "date", "date-time"]
                    .into_iter()
                    .find(|k| *k == s);
                if known.is_none() {
                    cx.error_spanned_by(
                        &opt.value,
                        format!(
                            "unknown format `{s}`; the spec allows: email, uri, date, date-time"
                        ),
                    );
                }
                known
            })
        }
        "default" => match &opt.value {
            Some(Expr::Lit(lit)) => f.default = Some(lit.lit.clone()),
            Some(Expr::Unary(u)) => match (&*u.expr, u.op) {
                (Expr::Lit(lit), syn::UnOp::Neg(_)) => f.default = negate(cx, &lit.lit),
                _ => cx.error_spanned_by(u, "`default` takes a literal"),
            },
            _ => cx.error_spanned_by(
                &opt.key,
                "`default` takes a literal: a string, number or bool",
            ),
        },
        "checkbox" => f.checkbox = attr::flag_value(cx, opt),
        "confirm_text" => f.confirm_text = attr::flag_value(cx, opt),
        "redact" => f.redact = Some(attr::flag_value(cx, opt)),
        "enum_names" => f.enum_names = attr::flag_value(cx, opt),
        _ => {}
    }
}

fn negate(cx: &Ctxt, lit: &Lit) -> Option<Lit> {
    let text = match lit {
        Lit::Int(i) => format!("-{}", i.base10_digits()),
        Lit::Float(x) => format!("-{}", x.base10_digits()),
        other => {
            cx.error_spanned_by(other, "only numbers can be negative");
            return None;
        }
    };
    syn::parse_str::<Lit>(&text).ok().map(|mut l| {
        l.set_span(lit.span());
        l
    })
}

fn int_value(cx: &Ctxt, opt: &Opt) -> Option<u32> {
    match &opt.value {
        Some(Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        })) => i.base10_parse().map_err(|e| cx.push(e)).ok(),
        _ => {
            cx.error_spanned_by(
                &opt.key,
                format!("`{}` takes a whole number: `{} = 10`", opt.key, opt.key),
            );
            None
        }
    }
}

fn number_value(cx: &Ctxt, opt: &Opt) -> Option<f64> {
    let (negative, lit) = match &opt.value {
        Some(Expr::Lit(l)) => (false, &l.lit),
        Some(Expr::Unary(u)) if matches!(u.op, syn::UnOp::Neg(_)) => match &*u.expr {
            Expr::Lit(l) => (true, &l.lit),
            _ => return bad_number(cx, opt),
        },
        _ => return bad_number(cx, opt),
    };
    let value: f64 = match lit {
        Lit::Int(i) => i.base10_parse().map_err(|e| cx.push(e)).ok()?,
        Lit::Float(x) => x.base10_parse().map_err(|e| cx.push(e)).ok()?,
        _ => return bad_number(cx, opt),
    };
    Some(if negative { -value } else { value })
}

fn bad_number(cx: &Ctxt, opt: &Opt) -> Option<f64> {
    cx.error_spanned_by(
        &opt.key,
        format!("`{}` takes a number: `{} = 0`", opt.key, opt.key),
    );
    None
}

fn doc_comment(attrs: &[syn::Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .filter(|l| !l.is_empty())
        .collect();
    (!lines.is_empty()).then(|| lines.join(" "))
}

/// `Option<T>` → `T`.
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    match &last.arguments {
        PathArguments::AngleBracketed(args) => match args.args.first()? {
            GenericArgument::Type(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}

fn classify(cx: &Ctxt, name: &str, ty: &Type) -> Option<Kind> {
    let refuse = |what: &str, instead: &str| {
        cx.error_spanned_by(
            ty,
            format!("form field `{name}` is {what}: {FLAT_HINT}. {instead}"),
        );
        None
    };
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let ident = last.ident.to_string();
            if ident == "Vec"
                && let Some(item) = multi_select_item(last)
            {
                return Some(item);
            }
            if !matches!(last.arguments, PathArguments::None) {
                return match ident.as_str() {
                    "Vec" | "VecDeque" | "HashSet" | "BTreeSet" | "LinkedList" => refuse(
                        "a list of values a client cannot offer as choices",
                        "For a multi-select use `Vec<YourEnum>` with `#[derive(FormEnum)]` on the enum; otherwise use one field per item, or a `String` the handler splits.",
                    ),
                    "HashMap" | "BTreeMap" | "IndexMap" => {
                        refuse("a map", "Use one named field per key.")
                    }
                    "Option" => refuse("a nested `Option`", "Use a single `Option<T>`."),
                    _ => refuse(
                        "a generic type",
                        "Use String, bool, a number type, `Option` of those, or a `#[derive(FormEnum)]` enum.",
                    ),
                };
            }
            Some(match ident.as_str() {
                "String" => Kind::String,
                "bool" => Kind::Bool,
                "f32" | "f64" => Kind::Number,
                i if INTEGERS.contains(&i) => {
                    Kind::Integer(INTEGERS.iter().find(|t| **t == i).copied()?)
                }
                _ => Kind::Enum,
            })
        }
        Type::Tuple(_) => refuse("a tuple", "Use one named field per element."),
        Type::Array(_) | Type::Slice(_) => refuse(
            "a list",
            "Use one field per item, or a `String` the handler splits.",
        ),
        Type::Reference(_) => refuse(
            "a reference",
            "Own the value: use `String` instead of `&str`.",
        ),
        _ => refuse(
            "not a plain value type",
            "Use String, bool, a number type, `Option` of those, or a `#[derive(FormEnum)]` enum.",
        ),
    }
}

/// `Kind::Multi` for `Vec<E>` whose `E` is a plain path that is not a text, yes/no or number
/// type (those are free values, not choices; the trait bound checks `E` is a `FormEnum`).
fn multi_select_item(vec: &syn::PathSegment) -> Option<Kind> {
    let PathArguments::AngleBracketed(args) = &vec.arguments else {
        return None;
    };
    let Some(GenericArgument::Type(Type::Path(item))) = args.args.first() else {
        return None;
    };
    let last = item.path.segments.last()?;
    let plain = item.qself.is_none() && matches!(last.arguments, PathArguments::None);
    let ident = last.ident.to_string();
    let free = ["String", "bool", "f32", "f64", "Option"].contains(&ident.as_str())
        || INTEGERS.contains(&ident.as_str());
    (plain && !free).then_some(Kind::Multi)
}

fn check(cx: &Ctxt, fields: &[Field]) {
    for f in fields {
        if f.enum_names && !matches!(f.kind, Kind::Enum) {
            cx.error_spanned_by(
                &f.ident,
                "`#[form(enum_names)]` spells a single choice (a `#[derive(FormEnum)]` enum) as `enum` + `enumNames`; it does not apply to this field",
            );
        }
        let is_string = matches!(f.kind, Kind::String);
        let is_number = matches!(f.kind, Kind::Integer(_) | Kind::Number);
        if (f.min_length.is_some() || f.max_length.is_some() || f.format.is_some()) && !is_string {
            cx.error_spanned_by(
                &f.ident,
                "`min_length`, `max_length` and `format` apply only to `String` fields",
            );
        }
        if (f.minimum.is_some() || f.maximum.is_some()) && !is_number {
            cx.error_spanned_by(
                &f.ident,
                "`minimum` and `maximum` apply only to number fields",
            );
        }
        if let (Some(min), Some(max)) = (f.min_length, f.max_length)
            && min > max
        {
            cx.error_spanned_by(&f.ident, format!("`min_length` ({min}) is greater than `max_length` ({max}), so no answer could pass"));
        }
        if let (Some(min), Some(max)) = (f.minimum, f.maximum)
            && min > max
        {
            cx.error_spanned_by(
                &f.ident,
                format!(
                    "`minimum` ({min}) is greater than `maximum` ({max}), so no answer could pass"
                ),
            );
        }
        if let Kind::Integer(_) = f.kind
            && [f.minimum, f.maximum]
                .iter()
                .flatten()
                .any(|n| n.fract() != 0.0)
        {
            cx.error_spanned_by(
                &f.ident,
                "an integer field takes whole-number `minimum`/`maximum`",
            );
        }
        if f.checkbox && (f.optional || !matches!(f.kind, Kind::Bool)) {
            cx.error_spanned_by(
                &f.ident,
                "`#[form(checkbox)]` goes on a plain `bool` field: the human must tick it",
            );
        }
        if let Some(default @ Lit::Bool(b)) = &f.default
            && f.checkbox
            && b.value
        {
            cx.error_spanned_by(default, "a `#[form(checkbox)]` field cannot default to `true`: a pre-ticked box is consent the human never gave. Remove `default`, or write `default = false`");
        }
        if f.confirm_text && (f.optional || !matches!(f.kind, Kind::String)) {
            cx.error_spanned_by(&f.ident, "`#[form(confirm_text)]` goes on a plain `String` field: the human retypes the target there");
        }
        if let Some(default) = &f.default {
            let fits = matches!(
                (&f.kind, default),
                (Kind::String | Kind::Enum, Lit::Str(_))
                    | (Kind::Bool, Lit::Bool(_))
                    | (Kind::Integer(_), Lit::Int(_))
                    | (Kind::Number, Lit::Int(_) | Lit::Float(_))
            );
            if !fits {
                cx.error_spanned_by(
                    default,
                    format!("this default does not match the type of `{}`", f.ident),
                );
            }
        }
    }
    if let Some(second) = fields.iter().filter(|f| f.checkbox).nth(1) {
        cx.error_spanned_by(&second.ident, "only one field may be `#[form(checkbox)]`");
    }
    if let Some(second) = fields.iter().filter(|f| f.confirm_text).nth(1) {
        cx.error_spanned_by(
            &second.ident,
            "only one field may be `#[form(confirm_text)]`",
        );
    }
}
