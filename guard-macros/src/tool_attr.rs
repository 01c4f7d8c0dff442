//! Finds rmcp's `#[tool(...)]` on a method and writes guard's honest annotations into it.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, FnArg, ImplItemFn, Meta, Token, parse_quote, punctuated::Punctuated};

use crate::{ctxt::Ctxt, ty};

/// The hints guard owns; an author may still set `title` and `open_world_hint`.
const OWNED_HINTS: &[&str] = &["read_only_hint", "destructive_hint", "idempotent_hint"];

/// guard's attributes on a tool method: each makes it a guarded tool or states a claim
/// about its effect.
pub const GUARD_ATTRS: [&str; 6] = [
    "destructive",
    "ask",
    "read_only",
    "idempotent",
    "prepare",
    "confirm",
];

/// guard's attributes whose expansion adds the tool's hidden routes to the router (an
/// undo, a deferred run) in [`own_fn`], which guard's `#[tool_router]` calls for each
/// method that carries one. `#[confirm]` adds its own through `#[operations]`, which
/// expands before `#[tool_router]` and leaves the function in the impl.
pub const OWNS_ROUTES: [&str; 1] = ["destructive"];

/// The hidden associated function that adds `method`'s hidden routes to a router:
/// `fn __guard_own_<method>(router) -> router`.
pub fn own_fn(method: &syn::Ident) -> syn::Ident {
    quote::format_ident!("{OWN_PREFIX}{}", syn::ext::IdentExt::unraw(method))
}

/// How [`own_fn`] names its functions.
pub const OWN_PREFIX: &str = "__guard_own_";

/// [`own_fn`] of `method`, for a tool that adds no hidden route, or whose expansion failed
/// (its errors are reported): it hands the router back as it came, so the router's
/// function still compiles.
pub fn own_fn_adding_nothing(method: &syn::Ident) -> TokenStream {
    let own = own_fn(method);
    // Unused where rmcp's own `#[tool_router]` built the router (the exposure refuses such
    // a router anyway).
    quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        fn #own<R>(router: R) -> R {
            router
        }
    }
}

/// [`own_fn`] of `method`, running `adds` (statements that rebind `router`) on the router
/// of the server it belongs to.
pub fn own_fn_adding(method: &syn::Ident, rt: &TokenStream, adds: &[TokenStream]) -> TokenStream {
    if adds.is_empty() {
        return own_fn_adding_nothing(method);
    }
    let own = own_fn(method);
    let router = quote!(#rt::__private::rmcp::handler::server::router::tool::ToolRouter<Self>);
    quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        fn #own(router: #router) -> #router {
            #(#adds)*
            router
        }
    }
}

pub fn is_attr(attr: &Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == name)
}

/// rmcp's `#[tool]` or one of guard's attributes: what makes a method a tool.
pub fn is_tool_attr(attr: &Attribute) -> bool {
    is_attr(attr, "tool") || GUARD_ATTRS.iter().any(|n| is_attr(attr, n))
}

/// The first attribute on `f` named one of `names`.
pub fn find<'f>(f: &'f ImplItemFn, names: &[&str]) -> Option<&'f Attribute> {
    f.attrs.iter().find(|a| names.iter().any(|n| is_attr(a, n)))
}

/// Whether rmcp's `#[tool]` is still on `f`: below guard's attribute, not yet expanded.
pub fn has_tool(f: &ImplItemFn) -> bool {
    find(f, &["tool"]).is_some()
}

/// The name rmcp routes the tool under: `#[tool(name = "...")]`, else the method's name.
pub fn routed_name(f: &ImplItemFn) -> String {
    route(f).0
}

/// [`routed_name`], and where it is written: the `name` literal, else the method's name.
pub fn route(f: &ImplItemFn) -> (String, Span) {
    let named = f
        .attrs
        .iter()
        .filter(|a| is_attr(a, "tool"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .find_map(|meta| match meta {
            Meta::NameValue(nv) if nv.path.is_ident("name") => match nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some((s.value(), s.span())),
                _ => None,
            },
            _ => None,
        });
    named.unwrap_or_else(|| (f.sig.ident.to_string(), f.sig.ident.span()))
}

/// Has rmcp build the guarded tool's input schema through `__private::claim`, which marks
/// it as a guarded tool's; guard's `#[tool_router]` claims the marked routes where the
/// router is built, so the exposure can refuse a router in which another tool took the
/// name (see the runtime's `entry::claims`). The schema is the one `#[tool]` would build:
/// an explicit `input_schema`, else the `Parameters<T>` parameter's, else an empty object.
pub fn claim(f: &mut ImplItemFn, rt: &TokenStream) {
    // The schema of the arguments, whether rmcp (`Parameters<T>`) or guard
    // (`GuardArguments<T>`, in the methods guard generates) deserialises them.
    let params = f.sig.inputs.iter().find_map(|arg| match arg {
        FnArg::Typed(pt) if ty::arg_of(&pt.ty, "Parameters").is_some() => {
            let params = &pt.ty;
            Some(quote!(#params))
        }
        FnArg::Typed(pt) => ty::arg_of(&pt.ty, "GuardArguments")
            .map(|args| quote!(#rt::__private::rmcp::handler::server::wrapper::Parameters<#args>)),
        _ => None,
    });
    let Some(tool) = f.attrs.iter_mut().find(|a| is_attr(a, "tool")) else {
        return;
    };
    let mut args: Punctuated<Meta, Token![,]> = match &tool.meta {
        Meta::List(list) => list
            .parse_args_with(Punctuated::parse_terminated)
            .expect("checked by `set_hints`"),
        _ => Punctuated::new(),
    };
    let explicit = args.iter().find_map(|meta| match meta {
        Meta::NameValue(nv) if nv.path.is_ident("input_schema") => Some(nv.value.clone()),
        _ => None,
    });
    let schema = match (explicit, params) {
        (Some(expr), _) => quote!(#rt::__private::claim(#expr)),
        (None, Some(ty)) => quote!(#rt::__private::claim_parameters::<#ty>()),
        (None, None) => quote!(#rt::__private::claim_no_parameters()),
    };
    args = args
        .into_iter()
        .filter(|m| !m.path().is_ident("input_schema"))
        .collect();
    args.push(parse_quote!(input_schema = #schema));
    let path = tool.path().clone();
    *tool = parse_quote!(#[#path(#args)]);
}

/// Rewrites the method's `#[tool]` so its annotations carry `hints`
/// (`read_only_hint = true, ...`). Reports a missing `#[tool]` or an author-set hint.
pub fn set_hints(cx: &Ctxt, f: &mut ImplItemFn, guard_attr: &str, hints: proc_macro2::TokenStream) {
    let Some(tool) = f.attrs.iter_mut().find(|a| is_attr(a, "tool")) else {
        cx.error_spanned_by(
            &f.sig.ident,
            format!(
                "`#[{guard_attr}]` must sit directly above rmcp's `#[tool]` on a tool method; guard writes the tool's annotations into that `#[tool]`, and attribute order matters"
            ),
        );
        return;
    };
    let args: Punctuated<Meta, Token![,]> = match &tool.meta {
        Meta::Path(_) => Punctuated::new(),
        Meta::List(list) => match list.parse_args_with(Punctuated::parse_terminated) {
            Ok(args) => args,
            Err(e) => {
                cx.push(e);
                return;
            }
        },
        Meta::NameValue(nv) => {
            cx.error_spanned_by(
                nv,
                "`#[tool]` takes a list: `#[tool(description = \"...\")]`",
            );
            return;
        }
    };
    let mut kept: Punctuated<Meta, Token![,]> = Punctuated::new();
    for meta in args.iter() {
        let Meta::List(list) = meta else { continue };
        if !list.path.is_ident("annotations") {
            continue;
        }
        let nested = match list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
            Ok(nested) => nested,
            Err(e) => {
                cx.push(e);
                return;
            }
        };
        for inner in nested {
            let owned = OWNED_HINTS.iter().find(|h| inner.path().is_ident(h));
            match owned {
                Some(hint) => cx.error_spanned_by(
                    inner.path(),
                    format!(
                        "`{hint}` is set by `#[{guard_attr}]` so the annotations stay honest; remove it here{}",
                        if *hint == "idempotent_hint" { " and declare `#[destructive(idempotent)]` if repeats change nothing" } else { "" }
                    ),
                ),
                None => kept.push(inner),
            }
        }
    }
    let hints = if kept.is_empty() {
        hints
    } else {
        quote!(#kept, #hints)
    };
    let mut out: Punctuated<Meta, Token![,]> = args
        .into_iter()
        .filter(|m| !m.path().is_ident("annotations"))
        .collect();
    out.push(parse_quote!(annotations(#hints)));
    let path = tool.path().clone();
    *tool = parse_quote!(#[#path(#out)]);
}

pub fn read_only_hints() -> proc_macro2::TokenStream {
    quote!(read_only_hint = true, destructive_hint = false)
}

pub fn idempotent_hints() -> proc_macro2::TokenStream {
    quote!(read_only_hint = false, idempotent_hint = true)
}

pub fn destructive_hints(idempotent: bool) -> proc_macro2::TokenStream {
    quote!(read_only_hint = false, destructive_hint = true, idempotent_hint = #idempotent)
}

/// An `#[ask]` tool collects input and changes nothing guard could vouch for as read-only.
pub fn ask_hints() -> proc_macro2::TokenStream {
    quote!(read_only_hint = false, destructive_hint = false)
}

pub fn prepare_hints() -> proc_macro2::TokenStream {
    quote!(
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false
    )
}

/// A confirm's repeat returns the stored result and changes nothing more.
pub fn confirm_hints() -> proc_macro2::TokenStream {
    quote!(
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true
    )
}

/// Rebinds `binding` (the `GuardArguments<T>` a two-phase or keyed tool takes) as rmcp's
/// `Parameters<T>` for the author's handler, once guard deserialised it: a wrong shape ends
/// the call there with guard's refusal, audited for `tool` and `op` and the caller of the
/// dispatched call (`__guard_call`, which every such tool takes first). Names the tool does
/// not take are refused too, unless `ignore_unknown` (`unknown_arguments = "ignore"`).
pub fn guard_arguments(
    rt: &TokenStream,
    binding: &syn::Ident,
    tool: TokenStream,
    op: TokenStream,
    ignore_unknown: bool,
) -> TokenStream {
    let lenient = ignore_unknown.then(|| quote!(let #binding = #binding.ignoring_unknown();));
    quote! {
        #lenient
        let #binding = #rt::__private::rmcp::handler::server::wrapper::Parameters(
            match #rt::__private::arguments(#rt::Guarded::guard(self), &__guard_call, #tool, #op, #binding).await {
                ::core::result::Result::Ok(args) => args,
                ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
            },
        );
    }
}
