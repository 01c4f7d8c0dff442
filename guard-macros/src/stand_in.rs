//! What a guarded tool method expands to when guard reported an error on it: the author's
//! body under a hidden name (so its own errors still show), and a stand-in under the tool's
//! name that keeps rmcp's `#[tool]`, so rmcp's router still finds the tool and one mistake
//! does not cascade into routing errors or unused imports. Every attribute macro on a
//! method (`#[destructive]`, `#[idempotent(key = ..)]`, `#[prepare]`, `#[confirm]`) ends
//! here on error.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{ImplItem, ImplItemFn};

use crate::tool_attr::{self, is_attr};

/// The author's body under a hidden name, without the tool attributes.
pub fn hidden(mut f: ImplItemFn) -> ImplItemFn {
    f.sig.ident = format_ident!("__guard_{}", f.sig.ident);
    f.attrs
        .retain(|a| !tool_attr::is_tool_attr(a) && !a.path().is_ident("doc"));
    f.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    f.vis = syn::Visibility::Inherited;
    f
}

/// The hidden body and the routable stand-in for `f`.
pub fn fallback(f: ImplItemFn) -> [ImplItem; 2] {
    let name = f.sig.ident.clone();
    let vis = f.vis.clone();
    let tool: Vec<_> = f.attrs.iter().filter(|a| is_attr(a, "tool")).collect();
    // Guard attributes already reported on this tool are dropped, not expanded; their
    // imports are still used.
    let dropped: Vec<_> = f
        .attrs
        .iter()
        .filter(|a| tool_attr::is_tool_attr(a) && !is_attr(a, "tool"))
        .map(|a| a.path())
        .collect();
    let unreachable = quote! {
        #(#[allow(unused_imports)] use #dropped as _;)*
        ::core::unreachable!("guard reported a compile error for this tool")
    };
    let stand_in = if tool.is_empty() {
        // `#[tool]` already ran above guard's attribute (or is missing): rmcp routes a
        // method returning a boxed future.
        syn::parse_quote! {
            #[allow(dead_code)]
            #vis fn #name(&self) -> ::std::pin::Pin<::std::boxed::Box<dyn ::core::future::Future<Output = ::std::string::String> + ::core::marker::Send + '_>> {
                #unreachable
            }
        }
    } else {
        syn::parse_quote! {
            #(#tool)*
            #vis async fn #name(&self) -> ::std::string::String {
                #unreachable
            }
        }
    };
    let mut body = hidden(f);
    body.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    [ImplItem::Fn(body), ImplItem::Fn(stand_in)]
}

/// [`fallback`] as tokens, after `errors`.
pub fn with_errors(errors: TokenStream, f: ImplItemFn) -> TokenStream {
    let [body, stand_in] = fallback(f);
    quote!(#errors #body #stand_in)
}
