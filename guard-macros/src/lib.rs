//! Macros for guard. They parse, check and expand; the behaviour lives in `rmcp_guard`,
//! which re-exports everything here. Depend on `rmcp_guard`, not on this crate.

mod attr;
mod ctxt;
mod destructive;
mod form;
mod form_enum;
mod keyed;
mod krate;
mod names;
mod operations;
mod read_only;
mod tool_args;
mod tool_attr;

use proc_macro::TokenStream;
use syn::{DeriveInput, ImplItemFn, ItemImpl, parse_macro_input};

/// Guards a destructive rmcp tool method. Put it directly above `#[tool]`.
///
/// Options: `confirm = "checkbox" | "type_to_confirm"`, `form = Type`, `target = field`,
/// `preview = path` (required), `validate = path`, `message = "..."`, `timeout = "5m"`,
/// `on_decline = "..."`, `on_cancel = "..."`, `idempotent`, `crate = "path"` (where
/// rmcp_guard is when the crate reaches it through a re-export; a renamed dependency is
/// found in the crate's Cargo.toml).
#[proc_macro_attribute]
pub fn destructive(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    destructive::expand(attr.into(), f).into()
}

/// Marks an rmcp tool method as read-only (`readOnlyHint: true`). Put it above `#[tool]`.
#[proc_macro_attribute]
pub fn read_only(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    krate::finish(read_only::expand(attr.into(), f), None).into()
}

/// Claims that an identical repeat of this tool changes nothing (`idempotentHint: true`).
/// Put it above `#[tool]`; guard's testing kit fails a tool whose repeat changes state.
///
/// With options it makes a creating tool idempotent by key: `key = field` (a `String`
/// argument the model sends, one per request), `ttl = "24h"` (how long the key holds its
/// result), `crate = "path"`. The handler takes `&mut rmcp_guard::ops::Keyed` and its
/// `Parameters<Args>` and returns `Result<T, ToolError>`; a repeat with the key gets the
/// stored `T`, the key with other arguments is refused.
#[proc_macro_attribute]
pub fn idempotent(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    if !attr.is_empty() {
        return read_only::expand_idempotent(attr.into(), f).into();
    }
    krate::finish(read_only::expand_idempotent(attr.into(), f), None).into()
}

/// A flat elicitation form. Field options go in `#[form(...)]`: `title`, `description`,
/// `min_length`, `max_length`, `minimum`, `maximum`, `format`, `default`, `checkbox`,
/// `confirm_text`.
#[proc_macro_derive(Form, attributes(form))]
pub fn derive_form(input: TokenStream) -> TokenStream {
    krate::finish(form::derive(parse_macro_input!(input as DeriveInput)), None).into()
}

/// A unit-only enum offered as one choice; `#[form(title = "...", value = "...")]` per variant.
#[proc_macro_derive(FormEnum, attributes(form))]
pub fn derive_form_enum(input: TokenStream) -> TokenStream {
    krate::finish(
        form_enum::derive(parse_macro_input!(input as DeriveInput)),
        None,
    )
    .into()
}

/// Model-visible arguments of a guarded tool, checked for consent and identity fields.
#[proc_macro_derive(ToolArgs)]
pub fn derive_tool_args(input: TokenStream) -> TokenStream {
    krate::finish(
        tool_args::derive(parse_macro_input!(input as DeriveInput)),
        None,
    )
    .into()
}

/// Two-phase operations on an rmcp tool impl. Put it above `#[tool_router]`. It pairs each
/// `#[prepare(op = ...)]` tool with the `#[confirm(op = ...)]` tool of the same op and adds
/// the read-only `get_operation_result` tool.
#[proc_macro_attribute]
pub fn operations(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = parse_macro_input!(item as ItemImpl);
    operations::expand(attr.into(), item).into()
}

/// Freezes an intent for a later confirm: `op = "..."`, `ttl = "10m"`, `scope = "..."`,
/// `rate = "5/min"`. Read by `#[operations]` on the impl.
#[proc_macro_attribute]
pub fn prepare(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    krate::finish(operations::standalone("prepare", f), None).into()
}

/// Carries out a prepared intent once: `op = "..."`, `recheck = Self::fn`. Read by
/// `#[operations]` on the impl.
#[proc_macro_attribute]
pub fn confirm(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    krate::finish(operations::standalone("confirm", f), None).into()
}
