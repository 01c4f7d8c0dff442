//! `#[read_only]` and `#[idempotent]`: claims about a tool's effect, written into its
//! annotations. guard's testing kit checks both against what the tool really does.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, ImplItemFn, Type};

use crate::{ctxt::Ctxt, tool_attr};

/// Handle types that can write; a read-only tool must not take one.
const WRITE_HANDLES: &[&str] = &["WriteDb"];

pub fn expand(attr: TokenStream, mut f: ImplItemFn) -> TokenStream {
    let cx = Ctxt::new();
    if !attr.is_empty() {
        cx.error_spanned_by(&attr, "`#[read_only]` takes no options");
    }
    for arg in &f.sig.inputs {
        if let FnArg::Typed(pt) = arg
            && let Some(handle) = write_handle(&pt.ty)
        {
            cx.error_spanned_by(
                &pt.ty,
                format!(
                    "a `#[read_only]` tool takes the write-capable handle `{handle}`; take `guard_runtime::db::ReadDb` instead, which the database engine opens read-only so the tool cannot write even by mistake"
                ),
            );
        }
    }
    if let Some(other) = conflicting(&f, &["destructive"]) {
        cx.error_spanned_by(other, "a tool cannot be both `#[read_only]` and `#[destructive]`: remove `#[read_only]` if it changes anything, or `#[destructive]` if it only reads");
    } else if let Some(other) = conflicting(&f, &["idempotent"]) {
        cx.error_spanned_by(other, "a `#[read_only]` tool changes nothing, so it needs no `#[idempotent]` claim: remove `#[idempotent]`, or `#[read_only]` if the tool writes");
    } else {
        tool_attr::set_hints(&cx, &mut f, "read_only", tool_attr::read_only_hints());
    }
    finish(cx, f)
}

pub fn expand_idempotent(attr: TokenStream, mut f: ImplItemFn) -> TokenStream {
    let cx = Ctxt::new();
    if !attr.is_empty() {
        cx.error_spanned_by(&attr, "`#[idempotent]` takes no options");
    }
    if let Some(other) = conflicting(&f, &["destructive", "read_only"]) {
        cx.error_spanned_by(other, "`#[idempotent]` goes on a plain write tool; on a guarded tool write `#[destructive(idempotent)]`, and a `#[read_only]` tool needs no idempotency claim");
    } else {
        tool_attr::set_hints(&cx, &mut f, "idempotent", tool_attr::idempotent_hints());
    }
    finish(cx, f)
}

fn conflicting<'f>(f: &'f ImplItemFn, names: &[&str]) -> Option<&'f syn::Attribute> {
    f.attrs
        .iter()
        .find(|a| names.iter().any(|n| tool_attr::is_attr(a, n)))
}

fn write_handle(ty: &Type) -> Option<String> {
    let ty = match ty {
        Type::Reference(r) => &*r.elem,
        other => other,
    };
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?.ident.to_string();
    WRITE_HANDLES.contains(&last.as_str()).then_some(last)
}

fn finish(cx: Ctxt, f: ImplItemFn) -> TokenStream {
    match cx.check() {
        Ok(()) => quote!(#f),
        Err(errors) => quote!(#errors #f),
    }
}
