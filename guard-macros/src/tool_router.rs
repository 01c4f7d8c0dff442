//! guard's `#[tool_router]`: rmcp's, under a hidden name, and the router function the author
//! names built from it through `__private::claimed`, so the impl's guarded tools are claimed
//! where the router is built (see the runtime's `entry::claims`), and with the hidden routes
//! the impl's tools add for guard (an undo, a deferred run; see the runtime's
//! `entry::hidden`): each through its own hidden function, called here for every method
//! whose guard attribute adds one.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{ItemImpl, Meta, Token, Visibility, punctuated::Punctuated};

use crate::{ctxt::Ctxt, krate, tool_attr};

/// The options rmcp's `#[tool_router]` takes that guard reads: the rest (`allow_empty`) go to
/// rmcp as written.
struct Options {
    router: syn::Ident,
    vis: Visibility,
    server_handler: bool,
    forwarded: Vec<Meta>,
}

fn options(cx: &Ctxt, attr: TokenStream) -> Options {
    let mut options = Options {
        router: format_ident!("tool_router"),
        vis: Visibility::Inherited,
        server_handler: false,
        forwarded: Vec::new(),
    };
    let parser = Punctuated::<Meta, Token![,]>::parse_terminated;
    let metas = match syn::parse::Parser::parse2(parser, attr) {
        Ok(metas) => metas,
        Err(e) => {
            cx.push(e);
            return options;
        }
    };
    for meta in metas {
        match &meta {
            Meta::NameValue(nv) if nv.path.is_ident("router") => match &nv.value {
                syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                    options.router = p.path.get_ident().cloned().expect("checked");
                }
                other => cx.error_spanned_by(other, "`router = name`: the router function's name"),
            },
            Meta::NameValue(nv) if nv.path.is_ident("vis") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => match s.parse() {
                    Ok(vis) => options.vis = vis,
                    Err(e) => cx.push(e),
                },
                other => cx.error_spanned_by(
                    other,
                    "`vis = \"pub\"`: the router function's visibility, as a string",
                ),
            },
            Meta::Path(p) if p.is_ident("server_handler") => options.server_handler = true,
            _ => options.forwarded.push(meta),
        }
    }
    options
}

pub fn expand(attr: TokenStream, mut item: ItemImpl) -> TokenStream {
    let cx = Ctxt::new();
    let Options {
        router,
        vis,
        server_handler,
        forwarded,
    } = options(&cx, attr);
    if server_handler && item.trait_.is_some() {
        cx.error_spanned_by(
            &item.self_ty,
            "`server_handler` is only supported on inherent impl blocks (e.g. `impl MyType { ... }`)",
        );
    }
    let rt = krate::path(None);
    let rmcp = quote!(#rt::__private::rmcp);
    let unclaimed = format_ident!("__guard_unclaimed_{}", router);
    let own = own_fns(&item);
    item.items.push(syn::parse_quote! {
        #vis fn #router() -> #rmcp::handler::server::router::tool::ToolRouter<Self> {
            let router = #rt::__private::claimed(Self::#unclaimed());
            #(let router = Self::#own(router);)*
            router
        }
    });
    let handler = server_handler.then(|| {
        let self_ty = &item.self_ty;
        let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
        quote! {
            #[#rmcp::tool_handler(router = Self::#router())]
            impl #impl_generics #rmcp::ServerHandler for #self_ty #ty_generics #where_clause {}
        }
    });
    let expanded = quote! {
        #[#rmcp::tool_router(router = #unclaimed #(, #forwarded)*)]
        #item
        #handler
    };
    // On an error the impl is routed as written beside it, so one mistake does not cascade.
    let fallback = expanded.clone();
    cx.finish(|| expanded, || fallback)
}

/// The hidden functions that add the impl's hidden routes: one for each method a guard
/// attribute that adds them still sits on (it expands after this impl's attribute, and its
/// expansion writes the function, adding what its options call for), and each one an
/// impl-level attribute above this one already wrote (`#[operations]`, for its confirms).
fn own_fns(item: &ItemImpl) -> Vec<syn::Ident> {
    item.items
        .iter()
        .filter_map(|member| match member {
            syn::ImplItem::Fn(f) => Some(f),
            _ => None,
        })
        .filter_map(|f| {
            let written = f.sig.ident.to_string().starts_with(tool_attr::OWN_PREFIX);
            let method = matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
            let attributed = method && tool_attr::find(f, &tool_attr::OWNS_ROUTES).is_some();
            if written {
                Some(f.sig.ident.clone())
            } else if attributed {
                Some(tool_attr::own_fn(&f.sig.ident))
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::own_fns;

    #[test]
    fn every_method_whose_attribute_adds_hidden_routes_is_called_once() {
        let item: syn::ItemImpl = syn::parse_quote! {
            impl Server {
                #[rmcp_guard::destructive(confirm = "checkbox", preview = Self::p)]
                #[tool]
                async fn qualified(&self) {}
                #[destructive(confirm = "checkbox", preview = Self::p)]
                #[tool]
                async fn plain(&self) {}
                #[read_only]
                #[tool]
                async fn read(&self) {}
                #[doc(hidden)]
                fn __guard_own_confirm_cancel<R>(router: R) -> R { router }
                #[destructive]
                fn not_a_method() {}
            }
        };
        let called: Vec<String> = own_fns(&item).iter().map(|f| f.to_string()).collect();
        assert_eq!(
            called,
            [
                "__guard_own_qualified",
                "__guard_own_plain",
                "__guard_own_confirm_cancel"
            ]
        );
    }
}
