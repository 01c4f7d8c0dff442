//! `#[read_only]` and a bare `#[idempotent]`: claims about a tool's effect, written into its
//! annotations. guard's testing kit checks both against what the tool really does.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, ImplItemFn, Type};

use crate::{ctxt::Ctxt, read_handle, tool_attr};

pub fn expand(attr: TokenStream, mut f: ImplItemFn) -> TokenStream {
    if !attr.is_empty() && tool_attr::find(&f, &["destructive"]).is_none() {
        // Options declare a disclosure: the tool asks before it shows anything.
        if let Some(other) = tool_attr::find(&f, &["idempotent"]) {
            let error = syn::Error::new_spanned(other, "a `#[read_only]` tool changes nothing, so it needs no `#[idempotent]` claim: remove `#[idempotent]`").to_compile_error();
            return quote!(#error #f);
        }
        return crate::disclose::expand(attr, f);
    }
    let cx = Ctxt::new();
    if let Some(other) = tool_attr::find(&f, &["destructive"]) {
        // The handler takes its proof, which is no read handle: this error is the one to fix.
        cx.error_spanned_by(other, "a tool cannot be both `#[read_only]` and `#[destructive]`: remove `#[read_only]` if it changes anything, or `#[destructive]` if it only reads");
        return finish(cx, f);
    }
    impl_trait_errors(&cx, &f);
    let checks = read_handle::checks(&f, &crate::krate::path(None));
    f.block.stmts.splice(0..0, checks);
    if let Some(other) = tool_attr::find(&f, &["idempotent"]) {
        cx.error_spanned_by(other, "a `#[read_only]` tool changes nothing, so it needs no `#[idempotent]` claim: remove `#[idempotent]`, or `#[read_only]` if the tool writes");
    } else {
        tool_attr::set_hints(&cx, &mut f, "read_only", tool_attr::read_only_hints());
    }
    finish(cx, f)
}

/// A bare `#[idempotent]` is a claim; with options it is a keyed tool (see `crate::keyed`).
pub fn expand_idempotent(attr: TokenStream, mut f: ImplItemFn) -> TokenStream {
    if !attr.is_empty() {
        return crate::keyed::expand(attr, f);
    }
    let cx = Ctxt::new();
    if let Some(other) = tool_attr::find(&f, &["destructive", "read_only"]) {
        cx.error_spanned_by(other, "`#[idempotent]` goes on a plain write tool; on a guarded tool write `#[destructive(idempotent)]`, and a `#[read_only]` tool needs no idempotency claim");
    } else {
        tool_attr::set_hints(&cx, &mut f, "idempotent", tool_attr::idempotent_hints());
    }
    finish(cx, f)
}

/// A `#[read_only]` tool names each parameter's type, so guard can check it.
fn impl_trait_errors(cx: &Ctxt, f: &ImplItemFn) {
    for arg in &f.sig.inputs {
        if let FnArg::Typed(pt) = arg
            && let Type::ImplTrait(_) = &*pt.ty
        {
            cx.error_spanned_by(
                &pt.ty,
                "a `#[read_only]` tool names the type of each parameter, so guard can check it is a read handle; write the handle's type (for example `rmcp_guard::db::ReadDb`) instead of `impl ...`",
            );
        }
    }
}

/// The method as written (with the checks and hints added), beside any error: a claim
/// changes no signature, so the item itself is the fallback.
fn finish(cx: Ctxt, f: ImplItemFn) -> TokenStream {
    cx.finish(|| quote!(#f), || quote!(#f))
}
