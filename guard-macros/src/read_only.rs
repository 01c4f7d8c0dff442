//! `#[read_only]`: a tool that only reads, announced as such (`readOnlyHint: true`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::ImplItemFn;

use crate::{ctxt::Ctxt, tool_attr};

pub fn expand(attr: TokenStream, mut f: ImplItemFn) -> TokenStream {
    let cx = Ctxt::new();
    if !attr.is_empty() {
        cx.error_spanned_by(&attr, "`#[read_only]` takes no options");
    }
    if let Some(other) = f
        .attrs
        .iter()
        .find(|a| tool_attr::is_attr(a, "destructive"))
    {
        cx.error_spanned_by(other, "a tool cannot be both `#[read_only]` and `#[destructive]`: remove `#[read_only]` if it changes anything, or `#[destructive]` if it only reads");
    } else {
        tool_attr::set_hints(&cx, &mut f, "read_only", tool_attr::read_only_hints());
    }
    match cx.check() {
        Ok(()) => quote!(#f),
        Err(errors) => quote!(#errors #f),
    }
}
