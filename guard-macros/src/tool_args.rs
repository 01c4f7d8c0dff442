//! `#[derive(ToolArgs)]`: model-visible arguments that carry neither consent nor identity.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields};

use crate::{ctxt::Ctxt, names};

pub fn derive(input: DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    check(&cx, &input);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let item = quote!(impl #impl_generics ::guard_runtime::ToolArgs for #ident #ty_generics #where_clause {});
    match cx.check() {
        Ok(()) => item,
        Err(errors) => quote!(#errors #item),
    }
}

fn check(cx: &Ctxt, input: &DeriveInput) {
    let Data::Struct(data) = &input.data else {
        cx.error_spanned_by(&input.ident, "`ToolArgs` derives on a struct of named arguments, so guard can check every name the model fills in");
        return;
    };
    let Fields::Named(fields) = &data.fields else {
        if !matches!(data.fields, Fields::Unit) {
            cx.error_spanned_by(&data.fields, "tool arguments need named fields");
        }
        return;
    };
    for field in &fields.named {
        let Some(ident) = &field.ident else { continue };
        let mut wire_names = vec![(ident.to_string(), ident.span())];
        for a in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
            let _ = a.parse_nested_meta(|meta| {
                if meta.path.is_ident("rename") || meta.path.is_ident("alias") {
                    if let Ok(value) = meta.value().and_then(|v| v.parse::<syn::LitStr>()) {
                        wire_names.push((value.value(), value.span()));
                    }
                } else if meta.path.is_ident("flatten") {
                    cx.error_spanned_by(&meta.path, "a guarded tool's arguments cannot use `#[serde(flatten)]`: guard must see every name the model can fill in; list the fields directly");
                } else if meta.input.peek(syn::Token![=]) {
                    let _ = meta.value().and_then(|v| v.parse::<syn::Expr>());
                }
                Ok(())
            });
        }
        for (name, span) in wire_names {
            let snake = to_snake(&name);
            if names::is_consent_flag(&snake) {
                cx.push(syn::Error::new(span, format!(
                    "argument `{name}` lets the model claim the human's consent, and a value the model fills in proves nothing. Remove it: `#[destructive]` asks the human through elicitation and hands the handler a `Confirmed<_>` proof"
                )));
            } else if names::is_identity(&snake) {
                cx.push(syn::Error::new(span, format!(
                    "argument `{name}` lets the model choose who is acting; identity must come from trusted context (the server's environment for stdio, a verified bearer token over HTTP), never from tool arguments. Remove it: a `#[prepare]` tool reads the caller from `prepare.caller()`, other tools from an `IdentityProvider`"
                )));
            }
        }
    }
}

/// `userId` → `user_id`, so serde renames are checked by the same word rules.
fn to_snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out.replace('-', "_")
}
