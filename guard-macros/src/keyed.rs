//! `#[idempotent(key = field, ttl = "24h")]`: a tool that creates something, keyed by a
//! model-visible argument. The handler runs inside guard's keyed step, which answers a
//! repeat of the key with the stored result and refuses the key with other arguments.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Expr, FnArg, Ident, ImplItem, ImplItemFn, parse::Parser, spanned::Spanned};

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    krate, options,
    stand_in::{self, hidden},
    tool_attr,
    ty::{is_mut_ref, is_named, type_arg, typed_args},
};

/// `key` and `ttl` as given.
struct Opts {
    key: Option<Ident>,
    ttl_secs: Option<u64>,
    krate: Option<syn::Path>,
    /// `unknown_arguments = "ignore"`: names the tool does not take are dropped.
    ignore_unknown: bool,
}

/// Expands a keyed tool, or reports every problem and re-emits a stand-in.
pub fn expand(attr: TokenStream, mut f: ImplItemFn) -> TokenStream {
    let cx = Ctxt::new();
    let opts = options(&cx, attr);
    // An option list with mistakes in it is the error to fix; the handler's shape is
    // checked once the options say what it is for.
    if opts.is_some() {
        check(&cx, &f);
    }
    let opts = opts.unwrap_or(Opts {
        key: None,
        ttl_secs: None,
        krate: None,
        ignore_unknown: false,
    });
    if tool_attr::has_tool(&f) {
        tool_attr::set_hints(&cx, &mut f, "idempotent", tool_attr::idempotent_hints());
    }
    cx.finish(
        || {
            let tokens = generate(&f, &opts, &krate::path(opts.krate.as_ref()));
            quote!(#(#tokens)*)
        },
        || stand_in::with_errors(TokenStream::new(), f.clone()),
    )
}

/// The options, or `None` when any of them was reported.
fn options(cx: &Ctxt, attr: TokenStream) -> Option<Opts> {
    let mut o = Opts {
        key: None,
        ttl_secs: None,
        krate: None,
        ignore_unknown: false,
    };
    let written = syn::punctuated::Punctuated::<Opt, syn::Token![,]>::parse_terminated
        .parse2(attr.clone())
        .map_or(0, |list| list.len());
    let opts = options::parse(cx, attr.clone(), &options::IDEMPOTENT)?;
    let mut ok = opts.len() == written;
    let given: Vec<String> = opts.iter().map(|opt| opt.key.to_string()).collect();
    for opt in &opts {
        match opt.key.to_string().as_str() {
            "key" => o.key = key_field(cx, opt),
            "ttl" => o.ttl_secs = attr::duration_value(cx, opt, &attr::KEY_TTL),
            "crate" => o.krate = attr::crate_path(cx, opt),
            "unknown_arguments" => o.ignore_unknown = attr::ignores_unknown(cx, opt),
            _ => {}
        }
    }
    ok &= o.key.is_some() || !given.iter().any(|k| k == "key");
    ok &= o.ttl_secs.is_some() || !given.iter().any(|k| k == "ttl");
    if !ok {
        return None;
    }
    if !given.iter().any(|k| k == "key") {
        cx.error_spanned_by(&attr, "`#[idempotent(...)]` with options needs `key = field`: the argument of the tool's `Parameters<Args>` that carries the caller's idempotency key (a `String`). A bare `#[idempotent]` claims idempotency without a key");
    }
    if !given.iter().any(|k| k == "ttl") {
        cx.error_spanned_by(&attr, "`#[idempotent(key = ...)]` needs `ttl = \"24h\"`: how long a key answers with its stored result before it is purged and may run again");
    }
    Some(o)
}

/// `key = field`: a plain field name of the arguments.
fn key_field(cx: &Ctxt, opt: &Opt) -> Option<Ident> {
    match &opt.value {
        Some(Expr::Path(p)) if p.qself.is_none() && p.attrs.is_empty() => {
            p.path.get_ident().cloned().or_else(|| {
                cx.error_spanned_by(p, "`key` names one field of the tool's arguments, e.g. `key = request_id`, not a path");
                None
            })
        }
        other => {
            cx.error_spanned_by(other, "`key` names the field of the tool's arguments that carries the idempotency key, unquoted: `key = request_id`");
            None
        }
    }
}

/// `async fn(&self, &mut Keyed, Parameters<Args>) -> Result<R, ToolError>` below `#[tool]`.
fn check(cx: &Ctxt, f: &ImplItemFn) {
    if f.sig.asyncness.is_none() {
        cx.error_spanned_by(f.sig.fn_token, "an `#[idempotent(key = ...)]` handler must be `async fn`: guard awaits it inside the transaction its key's record commits in. Write `async fn`");
    }
    if !matches!(f.sig.inputs.first(), Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none())
    {
        cx.error_spanned_by(
            &f.sig.ident,
            "an `#[idempotent(key = ...)]` tool is a method taking `&self`",
        );
    }
    if !tool_attr::has_tool(f) {
        cx.error_spanned_by(&f.sig.ident, "`#[idempotent]` must sit directly above rmcp's `#[tool]` on a tool method; guard writes the tool's annotations into that `#[tool]`");
    }
    for other in ["destructive", "read_only", "prepare", "confirm"] {
        if let Some(a) = tool_attr::find(f, &[other]) {
            cx.error_spanned_by(a, format!("a keyed `#[idempotent(...)]` tool cannot also be `#[{other}]`: a key makes one call's creation safe to retry; a destructive change asks the human first, and a two-phase op is already keyed by its operation_id"));
        }
    }
    let mut keyed = 0;
    let mut params = 0;
    for (_, pt) in typed_args(f) {
        if is_named(&pt.ty, "Keyed") {
            keyed += 1;
            if !is_mut_ref(&pt.ty) {
                cx.error_spanned_by(&pt.ty, "take the keyed call as `&mut Keyed`");
            }
        } else if type_arg(&pt.ty, "Parameters").is_some() {
            params += 1;
        } else {
            cx.error_spanned_by(&pt.ty, "an `#[idempotent(key = ...)]` handler takes `&mut Keyed` (the trusted caller, the key and the transaction) and its `Parameters<Args>`, nothing else; the caller's identity comes from `Keyed::caller()`");
        }
    }
    if keyed != 1 {
        cx.error_spanned_by(&f.sig, "an `#[idempotent(key = ...)]` handler takes the keyed call once: `keyed: &mut rmcp_guard::ops::Keyed`, for the trusted caller, the key to pass on, and the transaction the effect commits in with the key's record");
    }
    if params != 1 {
        cx.error_spanned_by(&f.sig, "an `#[idempotent(key = ...)]` handler takes its arguments as one `Parameters<Args>`, the struct with the key field");
    }
    // A `Result` written out is read here; an alias is read by the compiler (`KeyedReturn`).
    let returns_result = match &f.sig.output {
        syn::ReturnType::Type(_, ty) => !is_named(ty, "Result") || type_arg(ty, "Result").is_some(),
        syn::ReturnType::Default => false,
    };
    if !returns_result {
        cx.error_spanned_by(&f.sig, "an `#[idempotent(key = ...)]` handler returns `Result<T, ToolError>` with `T: Serialize`: guard stores `T` under the key and answers a repeat with it");
    }
}

fn generate(f: &ImplItemFn, opts: &Opts, rt: &TokenStream) -> Vec<ImplItem> {
    let rmcp = quote!(#rt::__private::rmcp);
    let key = opts.key.as_ref().expect("checked");
    let key_name = key.to_string();
    let ttl = opts.ttl_secs.expect("checked");
    let tool = tool_attr::routed_name(f);
    let inner = format_ident!("__guard_{}", f.sig.ident);
    let mut params = Vec::new();
    let mut forward = Vec::new();
    let mut asserts = Vec::new();
    let mut args = None;
    let mut unpack = TokenStream::new();
    for (i, pt) in typed_args(f) {
        if is_named(&pt.ty, "Keyed") {
            forward.push(quote!(&mut __guard_keyed));
            continue;
        }
        let binding = format_ident!("__guard_p{}", i);
        let ty = &pt.ty;
        let inner_ty = type_arg(ty, "Parameters").expect("checked");
        asserts.push(
            quote_spanned!(ty.span()=> #rt::__private::assert_parameters::<#ty, #inner_ty>();),
        );
        args = Some((binding.clone(), inner_ty.span()));
        // Taken raw and deserialised by guard: a wrong shape is guard's refusal.
        params.push(quote!(#binding: #rt::__private::GuardArguments<#inner_ty>));
        unpack = tool_attr::guard_arguments(
            rt,
            &binding,
            quote!(__GUARD_SPEC.tool),
            quote!(__GUARD_SPEC.tool),
            opts.ignore_unknown,
        );
        forward.push(quote!(#binding));
    }
    let (args, args_span) = args.expect("checked");
    if let syn::ReturnType::Type(_, ret) = &f.sig.output {
        let at_ret = krate::respan(quote!(#rt::__private), ret.span());
        asserts.push(quote_spanned!(ret.span()=> #at_ret::assert_keyed_return::<#ret>();));
    }
    // The key must reach the handler, and the hash must cover every argument.
    let args_ty = typed_args(f)
        .find_map(|(_, pt)| type_arg(&pt.ty, "Parameters"))
        .expect("checked");
    let at_key = krate::respan(quote!(#rt::__private), key.span());
    let field = syn::ext::IdentExt::unraw(key).to_string();
    asserts.push(quote_spanned! {key.span()=>
        const _: () = #at_key::assert_key_hashed(
            <#args_ty as #at_key::ToolArgsDerived>::SKIPPED,
            <#args_ty as #at_key::ToolArgsDerived>::UNHASHED,
            #field,
        );
    });
    // Spanned at the arguments' type: arguments that cannot be hashed are reported there.
    let body = quote_spanned!(args_span=> &(#args).0);
    // Spanned at `key = field`: a missing field or one that is not a `String` is reported
    // where the key is named.
    let key_of = quote_spanned!(key.span()=> #rt::__private::key_field(&(#args).0.#key));
    let mut tool_fn = f.clone();
    let receiver = tool_fn.sig.inputs.first().cloned();
    tool_fn.sig.inputs =
        syn::parse_quote!(#receiver, __guard_call: #rt::__private::GuardCall, #(#params),*);
    tool_fn.sig.output = syn::parse_quote!(-> ::core::result::Result<#rmcp::model::CallToolResponse, #rmcp::ErrorData>);
    tool_fn.block = syn::parse_quote!({
        const __GUARD_SPEC: &#rt::__private::KeyedSpec = &#rt::__private::KeyedSpec {
            tool: #tool,
            key_field: #key_name,
            ttl: ::core::time::Duration::from_secs(#ttl),
        };
        #rt::__private::assert_guarded::<Self>();
        #(#asserts)*
        #unpack
        let mut __guard_keyed = match #rt::ops::Keyed::begin(
            #rt::Guarded::guard(self),
            &__guard_call,
            __GUARD_SPEC,
            #key_of,
            #body,
        ).await {
            ::core::result::Result::Ok(keyed) => keyed,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_outcome = Self::#inner(self, #(#forward),*).await;
        __guard_keyed.finish(__guard_outcome).await
    });
    tool_attr::claim(&mut tool_fn, rt);
    vec![ImplItem::Fn(hidden(f.clone())), ImplItem::Fn(tool_fn)]
}
