//! `#[read_only(discloses = "...", boundary = Self::boundary_fn, ...)]`: a tool that changes
//! nothing but may expose what it reads. Its annotations stay read-only; its `_meta.guard`
//! and description say what it discloses; the human is asked with the data boundary stated
//! (the flow of a `#[destructive]` tool with a checkbox), and the result is counted and
//! capped per call and per session.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Expr, ImplItemFn, Meta, Token, parse_quote, punctuated::Punctuated, spanned::Spanned};

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    destructive, grant,
    handler::{self, Shape},
    krate, options, stand_in, tool_attr,
};

/// The classes `discloses` takes, as the runtime's `DisclosureClass` names them.
const CLASSES: &[(&str, &str)] = &[
    ("sensitive", "Sensitive"),
    ("credentials", "Credentials"),
    ("bulk", "Bulk"),
    ("capability", "Capability"),
];

#[derive(Default)]
struct Options {
    /// The runtime's variant name, and where `discloses` was written.
    class: Option<(&'static str, Span)>,
    boundary: Option<Expr>,
    max_items: Option<(u64, Span)>,
    max_bytes: Option<(u64, Span)>,
    session_max_items: Option<(u64, Span)>,
    session_max_bytes: Option<(u64, Span)>,
    /// `grant = "10m", grant_calls = 20`: what a grant the human opens may cover.
    grant: grant::Grant,
    /// `approve = "url"`: approved on guard's page rather than in the client's form.
    approve: Option<Span>,
    approvers: Option<(u8, Span)>,
    /// `message`, `timeout`, `on_decline`, `on_cancel`, `crate`.
    asking: handler::Asking,
}

pub fn expand(attr: TokenStream, f: ImplItemFn) -> TokenStream {
    if let Some(misplaced) = handler::not_a_method(&f, "#[read_only(discloses = ...)]") {
        return misplaced;
    }
    let cx = Ctxt::new();
    let options = parse_options(&cx, attr);
    let shape = check(&cx, &f);
    let mut tool_fn = f.clone();
    tool_attr::set_hints(&cx, &mut tool_fn, "read_only", tool_attr::read_only_hints());
    let rt = krate::path(options.asking.krate.as_ref());
    let spec = spec(&options, &rt);
    describe(&cx, &mut tool_fn, &spec, &rt);
    cx.finish(
        || generate(&options, &shape, tool_fn, &spec, &rt),
        || stand_in::with_errors(TokenStream::new(), f),
    )
}

fn parse_options(cx: &Ctxt, attr: TokenStream) -> Options {
    let mut o = Options::default();
    let Some(opts) = options::parse(cx, attr, &options::READ_ONLY) else {
        return o;
    };
    for opt in &opts {
        apply(cx, &mut o, opt);
    }
    check_options(cx, &o);
    options::check_rules(cx, &options::READ_ONLY, &opts);
    o
}

fn apply(cx: &Ctxt, o: &mut Options, opt: &Opt) {
    if o.asking.apply(cx, opt) || o.grant.apply(cx, opt) {
        return;
    }
    let key = opt.key.to_string();
    match key.as_str() {
        "discloses" => {
            let Some(class) = attr::string_value(cx, opt) else {
                return;
            };
            match CLASSES.iter().find(|(name, _)| *name == class) {
                Some((_, variant)) => o.class = Some((variant, opt.value.span())),
                None => cx.error_spanned_by(
                    &opt.value,
                    format!(
                        "unknown disclosure class `{class}`; use one of: {} (written exactly, in lowercase)",
                        CLASSES.iter().map(|(n, _)| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
                    ),
                ),
            }
        }
        "boundary" => o.boundary = attr::expr_value(cx, opt, "Self::boundary_fn").cloned(),
        "max_items" => o.max_items = cap_value(cx, opt),
        "max_bytes" => o.max_bytes = cap_value(cx, opt),
        "session_max_items" => o.session_max_items = cap_value(cx, opt),
        "session_max_bytes" => o.session_max_bytes = cap_value(cx, opt),
        "approve" => o.approve = destructive::approve_value(cx, opt),
        "approvers" => o.approvers = destructive::approvers_value(cx, opt),
        _ => {}
    }
}

/// A cap: a whole number from 1 up.
fn cap_value(cx: &Ctxt, opt: &Opt) -> Option<(u64, Span)> {
    attr::count_value(cx, opt, u64::MAX, || {
        format!(
            "`{}` takes a whole number from 1 up, e.g. `{} = 500`",
            opt.key, opt.key
        )
    })
}

/// Rules that read the options' values (the declaration holds those between options): a
/// declared class, a boundary, caps that fit together.
fn check_options(cx: &Ctxt, o: &Options) {
    let Some((class, _)) = o.class else {
        cx.push(syn::Error::new(
            Span::call_site(),
            "`#[read_only]` takes options only to declare what the tool discloses: add `discloses = \"sensitive\"` (or \"credentials\", \"bulk\", \"capability\") and `boundary = Self::boundary_fn`, or remove the options",
        ));
        return;
    };
    if o.boundary.is_none() {
        cx.push(syn::Error::new(
            Span::call_site(),
            "a disclosing tool needs `boundary = path::to::fn`: the human must read the data boundary in plain words (the target, the scope, the account, how many items) before anything is shown, and guard computes it again before the handler runs. Add `boundary = Self::boundary_...` (an `async fn(&self, &Args) -> Result<rmcp_guard::Boundary, ToolError>`)",
        ));
    }
    if class == "Bulk" && o.max_items.is_none() && o.max_bytes.is_none() {
        cx.push(syn::Error::new(
            o.class.map_or(Span::call_site(), |c| c.1),
            "a `discloses = \"bulk\"` tool must be bounded: add `max_items = N` (items per call) or `max_bytes = N` (bytes per call), and preferably `session_max_items` too",
        ));
    }
    for (per_call, session, what) in [
        (o.max_items, o.session_max_items, "items"),
        (o.max_bytes, o.session_max_bytes, "bytes"),
    ] {
        if let (Some((call, _)), Some((sess, span))) = (per_call, session)
            && sess < call
        {
            cx.push(syn::Error::new(
                span,
                format!("`session_max_{what} = {sess}` is below `max_{what} = {call}`: one call could never show its own cap. Raise `session_max_{what}` to at least {call}, or lower `max_{what}`"),
            ));
        }
    }
}

/// The handler: `async fn(&self, ...)` taking its arguments and read handles, no proof.
fn check(cx: &Ctxt, f: &ImplItemFn) -> Shape {
    if !tool_attr::has_tool(f) {
        return Shape::NONE;
    }
    if let Some(other) = tool_attr::find(f, &["ask"]) {
        cx.error_spanned_by(other, "`#[ask]` collects input and a disclosing `#[read_only]` asks to show data: a tool takes one of them");
    }
    let shape = handler::read(
        cx,
        f,
        &handler::Attr {
            name: "read_only",
            proof: "Confirmed",
            noun: "proof",
            waits: "anything is shown",
        },
    );
    if let Some((_, ty, _)) = &shape.proof {
        cx.error_spanned_by(ty, "a disclosing tool takes no `Confirmed<_>` proof: guard asks before the body runs and the body is never reachable otherwise. Remove the parameter");
    }
    if let Some((_, ty)) = &shape.picked {
        cx.error_spanned_by(ty, "`Picked` is the proof of a `#[destructive(batch)]` question; a disclosing tool takes no proof. Remove the parameter");
    }
    if matches!(f.sig.output, syn::ReturnType::Default) {
        cx.error_spanned_by(&f.sig, "a disclosing tool returns what it shows with its count: `-> Result<rmcp_guard::Disclosed<String>, ToolError>`");
    }
    shape
}

/// The `DisclosureSpec` literal, used in the tool's `_meta` and by the flow.
fn spec(o: &Options, rt: &TokenStream) -> TokenStream {
    let private = quote!(#rt::__private);
    let class = syn::Ident::new(o.class.map_or("Sensitive", |c| c.0), Span::call_site());
    let cap = |c: Option<(u64, Span)>| match c {
        Some((n, _)) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let (max_items, max_bytes, session_max_items, session_max_bytes) = (
        cap(o.max_items),
        cap(o.max_bytes),
        cap(o.session_max_items),
        cap(o.session_max_bytes),
    );
    quote! {
        #private::DisclosureSpec {
            class: #private::DisclosureClass::#class,
            max_items: #max_items,
            max_bytes: #max_bytes,
            session_max_items: #session_max_items,
            session_max_bytes: #session_max_bytes,
        }
    }
}

/// Writes the disclosure into the tool's `#[tool]`: `meta` (`_meta.guard.discloses` and the
/// caps) and the end of its description (a `description = "..."` literal, else a last
/// doc-comment line).
fn describe(cx: &Ctxt, f: &mut ImplItemFn, spec: &TokenStream, rt: &TokenStream) {
    let Some(at) = f.attrs.iter().position(|a| tool_attr::is_attr(a, "tool")) else {
        return;
    };
    let args: Punctuated<Meta, Token![,]> = match &f.attrs[at].meta {
        Meta::List(list) => match list.parse_args_with(Punctuated::parse_terminated) {
            Ok(args) => args,
            Err(_) => return, // reported by `set_hints`
        },
        _ => Punctuated::new(),
    };
    let private = quote!(#rt::__private);
    let mut out: Punctuated<Meta, Token![,]> = Punctuated::new();
    let mut base = None;
    for meta in args {
        match &meta {
            Meta::NameValue(nv) if nv.path.is_ident("meta") => {
                cx.error_spanned_by(&nv.path, "a disclosing tool's `meta` is set by guard (`_meta.guard.discloses` and its caps, so a client can show them): remove `meta` here");
            }
            Meta::NameValue(nv) if nv.path.is_ident("description") => {
                let value = &nv.value;
                base = Some(quote!(#value));
            }
            _ => out.push(meta),
        }
    }
    // As rmcp reads doc comments: each line trimmed, empty lines left out, joined by newlines.
    let base = base.unwrap_or_else(|| {
        let lines = f.attrs.iter().filter_map(|a| match &a.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => {
                    let line = s.value().trim().to_owned();
                    (!line.is_empty()).then(|| quote!(#line))
                }
                Expr::Macro(m) => Some(quote!(#m)),
                _ => None,
            },
            _ => None,
        });
        quote!(<[&str]>::join(&[#(#lines),*], "\n"))
    });
    out.push(parse_quote!(description = #private::disclosed_description(&(#spec), #base)));
    out.push(parse_quote!(meta = (#spec).meta()));
    let path = f.attrs[at].path().clone();
    f.attrs[at] = parse_quote!(#[#path(#out)]);
}

/// The expansion: the flow of a `#[destructive(confirm = "checkbox")]` tool, with the
/// boundary as its preview, then the author's body inlined, its result counted and capped,
/// and shown only if the boundary after it is still the one the human approved.
fn generate(
    o: &Options,
    shape: &Shape,
    tool_fn: ImplItemFn,
    spec: &TokenStream,
    rt: &TokenStream,
) -> TokenStream {
    let private = quote!(#rt::__private);
    let handler::Rewritten {
        params,
        rebind,
        mut asserts,
        unpack,
    } = handler::rewrite(
        shape,
        &tool_fn,
        usize::MAX,
        "__guard_unused",
        &o.asking,
        &private,
    );
    asserts.push(quote!(#private::assert_guarded::<Self>();));
    asserts.extend(handler::assert_parameters(shape, &private));
    // The read-handle checks of `#[read_only]` keep applying to every parameter.
    asserts.extend(
        crate::read_handle::checks(&tool_fn, rt)
            .into_iter()
            .map(|check| quote!(#check)),
    );
    if let syn::ReturnType::Type(_, ty) = &tool_fn.sig.output {
        let at = krate::respan(private.clone(), ty.span());
        asserts.push(quote_spanned!(ty.span()=> #at::assert_disclosed::<#ty>();));
    }
    let boundary = o.boundary.as_ref().expect("checked");
    let at_boundary = krate::respan(private.clone(), boundary.span());
    let (boundary_call, boundary_after) = if shape.params.is_some() {
        let args = krate::local_at("__guard_args", boundary.span());
        let again = krate::local_at("__guard_again", boundary.span());
        (
            quote_spanned!(boundary.span()=> #at_boundary::boundary(#boundary, self, &#args).await),
            // The handler took the arguments: the boundary after it reads them again.
            quote_spanned!(boundary.span()=> match __guard_flow.arguments_again() {
                ::core::result::Result::Ok(#again) => #at_boundary::boundary(#boundary, self, &#again).await,
                ::core::result::Result::Err(error) => ::core::result::Result::Err(error),
            }),
        )
    } else {
        let call =
            quote_spanned!(boundary.span()=> #at_boundary::boundary_no_args(#boundary, self).await);
        (call.clone(), call)
    };
    let tool_name = tool_attr::routed_name(&tool_fn);
    let spec_fields = o.asking.spec_fields(o.asking.message.as_deref());
    let approval = destructive::approval_spec(o.approve, o.approvers, None, &private);
    let grant = o.grant.spec(&private);
    let body = handler::body(&tool_fn, &rebind);
    let form = quote!(#rt::forms::Checkbox);
    let dispatched = handler::dispatched();
    let none = quote!(::core::option::Option::None);
    let asked = handler::asked(&none, &none);
    let block = quote! {
        const __GUARD_SPEC: &#private::ToolSpec = &#private::ToolSpec {
            name: #tool_name,
            confirm: #private::ConfirmKind::Checkbox,
            #spec_fields
            approval: #approval,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: #grant,
        };
        const __GUARD_DISCLOSES: &#private::DisclosureSpec = &#spec;
        #(#asserts)*
        let __guard_flow = #private::Flow::<#form>::new(
            #rt::Guarded::guard(self),
            __guard_call,
            __GUARD_SPEC,
        );
        #dispatched
        #unpack
        let __guard_shown = match __guard_flow.bound(__GUARD_DISCLOSES, __guard_incoming, #boundary_call).await {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        #asked
        let __guard_approved = match __guard_flow.rebound(__GUARD_DISCLOSES, __guard_accepted, #boundary_call).await {
            ::core::result::Result::Ok(approved) => approved,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_result = #body;
        let __guard_after = #boundary_after;
        __guard_flow.finish_disclosed(__GUARD_DISCLOSES, __guard_approved, __guard_result, __guard_after).await
    };
    handler::finish(tool_fn, &params, block, rt)
}
