//! A guarded handler's signature, read and rewritten the same way by every attribute that
//! hands the body a value only guard builds (`#[destructive]`'s `Confirmed<F>` or `Picked`,
//! `#[ask]`'s `Answered<F>`): which parameter is the tool's arguments, which the guard value,
//! and how the expansion takes the rest from rmcp and binds the author's patterns again.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{FnArg, ImplItemFn, Pat, Type, spanned::Spanned};

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    krate, tool_attr,
};

/// The options of the question itself, which every attribute that asks the human shares:
/// `message`, `validate`, `timeout`, `on_decline`, `on_cancel`, `unknown_arguments` and
/// `crate`.
#[derive(Default)]
pub struct Asking {
    pub message: Option<String>,
    pub validate: Option<syn::Expr>,
    pub timeout_secs: Option<u64>,
    pub on_decline: Option<String>,
    pub on_cancel: Option<String>,
    /// `unknown_arguments = "ignore"`: names the tool does not take are dropped.
    pub ignore_unknown: bool,
    pub krate: Option<syn::Path>,
}

impl Asking {
    /// Takes `opt` if it is one of these options; `false` leaves it to the attribute.
    pub fn apply(&mut self, cx: &Ctxt, opt: &Opt) -> bool {
        match opt.key.to_string().as_str() {
            "message" => {
                self.message = attr::shown_text_value(cx, opt, "Delete the build cache?");
            }
            "validate" => {
                self.validate = attr::expr_value(cx, opt, "Self::rules_fn").cloned();
            }
            "timeout" => self.timeout_secs = attr::duration_value(cx, opt, &attr::TIMEOUT),
            "on_decline" => self.on_decline = attr::string_value(cx, opt),
            "on_cancel" => self.on_cancel = attr::string_value(cx, opt),
            "unknown_arguments" => self.ignore_unknown = attr::ignores_unknown(cx, opt),
            "crate" => self.krate = attr::crate_path(cx, opt),
            _ => return false,
        }
        true
    }

    /// The `ToolSpec` fields these options set, with `message` as the question's header.
    pub fn spec_fields(&self, message: Option<&str>) -> TokenStream {
        let message = opt_str(message);
        let on_decline = opt_str(self.on_decline.as_deref());
        let on_cancel = opt_str(self.on_cancel.as_deref());
        let timeout = match self.timeout_secs {
            Some(secs) => {
                quote!(::core::option::Option::Some(::core::time::Duration::from_secs(#secs)))
            }
            None => quote!(::core::option::Option::None),
        };
        quote! {
            message: #message,
            timeout: #timeout,
            on_decline: #on_decline,
            on_cancel: #on_cancel,
        }
    }

    /// The author's `validate` rules on `form_ty`, as the flow's `Option<Rules<F>>`. A
    /// function argument, not an `as` cast: a wrong signature is a type mismatch that names
    /// the expected `fn(&Form) -> Result<(), String>`.
    pub fn rules(&self, form_ty: Option<&Type>, private: &TokenStream) -> TokenStream {
        match (&self.validate, form_ty) {
            (Some(v), Some(form_ty)) => {
                let at_validate = krate::respan(private.clone(), v.span());
                quote_spanned! {v.span()=>
                    ::core::option::Option::Some(#at_validate::rules::<#form_ty>(#v))
                }
            }
            _ => quote!(::core::option::Option::None),
        }
    }
}

/// `Some("text")` or `None`, as tokens.
pub fn opt_str(s: Option<&str>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// `#[attr]` on something that is not a method taking `self`: the one error to report, with
/// the item kept, since nothing else about it can be judged.
pub fn not_a_method(f: &ImplItemFn, attr: &str) -> Option<TokenStream> {
    if matches!(f.sig.inputs.first(), Some(FnArg::Receiver(_))) {
        return None;
    }
    let error = syn::Error::new_spanned(
        &f.sig.ident,
        format!("`{attr}` goes on a tool method (`async fn name(&self, ...)` with `#[tool]` below it) inside a `#[tool_router]` impl block, not on a free function or an associated function without `&self`"),
    )
    .to_compile_error();
    Some(quote!(#error #f))
}

/// The handler's parameters, by role.
pub struct Shape {
    /// Index and type of `Parameters<T>`, and `T`.
    pub params: Option<(usize, Type, Type)>,
    /// Index of the guard value `Name<F>` (`Confirmed`, `Answered`), the parameter's type, and `F`.
    pub proof: Option<(usize, Type, Type)>,
    /// Index of a batch tool's `Picked` proof and the parameter's type.
    pub picked: Option<(usize, Type)>,
}

impl Shape {
    pub const NONE: Shape = Shape {
        params: None,
        proof: None,
        picked: None,
    };
}

/// The attribute whose handler is read, as its messages name it.
pub struct Attr {
    /// `destructive`, `ask`.
    pub name: &'static str,
    /// The guard value's type: `Confirmed`, `Answered`.
    pub proof: &'static str,
    /// What the value is, in messages: `proof`, `answer`.
    pub noun: &'static str,
    /// What waits for the human: `the effect`, `the handler`.
    pub waits: &'static str,
}

/// Reads the parameters of `f` under `attr`, reporting every mistake the attributes share:
/// a sync handler, `#[read_only]` beside it, a receiver other than `&self`, `impl Trait`
/// parameters, a role taken twice, patterns by reference.
pub fn read(cx: &Ctxt, f: &ImplItemFn, attr: &Attr) -> Shape {
    let Attr {
        name: attr,
        proof,
        noun,
        waits,
    } = attr;
    if f.sig.asyncness.is_none() {
        cx.error_spanned_by(
            f.sig.fn_token,
            format!("a `#[{attr}]` handler must be `async fn`: guard awaits the human's answer before {waits} runs. Write `async fn`"),
        );
    }
    if let Some(other) = tool_attr::find(f, &["read_only"]) {
        cx.error_spanned_by(other, format!("a tool cannot be both `#[read_only]` and `#[{attr}]`: remove `#[read_only]` if it changes anything, or `#[{attr}]` if it only reads"));
    }
    if let Some(FnArg::Receiver(r)) = f.sig.inputs.first()
        && (r.reference.is_none() || r.mutability.is_some())
    {
        cx.error_spanned_by(
            r,
            format!("a `#[{attr}]` tool takes `&self`: rmcp calls tools on a shared server"),
        );
    }
    let mut shape = Shape::NONE;
    for (i, arg) in f.sig.inputs.iter().enumerate() {
        let FnArg::Typed(pt) = arg else { continue };
        if let Type::ImplTrait(_) = &*pt.ty {
            cx.error_spanned_by(
                &pt.ty,
                format!("a `#[{attr}]` tool names the type of each parameter, so guard can tell the arguments (`Parameters<YourArgs>`), the {noun} (`{proof}<YourForm>`) and rmcp's extractors apart; write the type instead of `impl ...`"),
            );
            continue;
        }
        if let Some(inner) = crate::ty::arg_of(&pt.ty, "Parameters") {
            if shape.params.is_some() {
                cx.error_spanned_by(&pt.ty, "take the tool's arguments once: one `Parameters<YourArgs>` holds every field the model fills in");
            }
            shape.params = Some((i, (*pt.ty).clone(), inner.clone()));
        } else if let Some(inner) = crate::ty::arg_of(&pt.ty, proof) {
            if shape.proof.is_some() {
                cx.error_spanned_by(&pt.ty, format!("take the `{proof}<_>` {noun} once"));
            }
            shape.proof = Some((i, (*pt.ty).clone(), inner.clone()));
        } else if crate::ty::is_bare(&pt.ty, "Picked") {
            if shape.picked.is_some() {
                cx.error_spanned_by(&pt.ty, "take the `Picked` proof once");
            }
            shape.picked = Some((i, (*pt.ty).clone()));
        }
    }
    for arg in f.sig.inputs.iter() {
        if let FnArg::Typed(pt) = arg
            && let Pat::Ident(pi) = &*pt.pat
            && pi.by_ref.is_some()
        {
            cx.error_spanned_by(pi, "handler parameters are taken by value");
        }
    }
    shape
}

/// The tool method's parameters once the guard value is taken out, and how the body gets
/// the author's patterns back.
pub struct Rewritten {
    /// The parameters rmcp fills (`__guard_pN: Ty`), in order.
    pub params: Vec<TokenStream>,
    /// The author's patterns bound again inside the body; the guard value from `__guard_<name>`.
    pub rebind: Vec<TokenStream>,
    /// Compile-time checks on the parameters: each extractor is rmcp's.
    pub asserts: Vec<TokenStream>,
    /// Takes the arguments out of `Parameters` as `__guard_args`, for the preview and checks.
    pub unpack: TokenStream,
}

/// Rewrites the parameters of `tool_fn`: the one at `guarded_at` becomes the local
/// `__guard_<local>` (spanned at the author's type, so a look-alike type is refused there).
/// The arguments refuse names the tool does not take unless `asking.ignore_unknown`.
pub fn rewrite(
    shape: &Shape,
    tool_fn: &ImplItemFn,
    guarded_at: usize,
    local: &str,
    asking: &Asking,
    private: &TokenStream,
) -> Rewritten {
    let rmcp = quote!(#private::rmcp);
    let mut out = Rewritten {
        params: Vec::new(),
        rebind: Vec::new(),
        asserts: Vec::new(),
        unpack: TokenStream::new(),
    };
    for (i, arg) in tool_fn.sig.inputs.iter().enumerate() {
        let FnArg::Typed(pt) = arg else { continue };
        let (pat, ty) = (&pt.pat, &pt.ty);
        if i == guarded_at {
            let value = krate::local_at(local, ty.span());
            out.rebind
                .push(quote_spanned!(ty.span()=> let #pat: #ty = #value;));
            continue;
        }
        let binding = format_ident!("__guard_p{}", i);
        if let Some((at, _, args_ty)) = &shape.params
            && *at == i
        {
            // Taken raw and deserialised by the flow: a wrong shape is guard's refusal.
            out.params
                .push(quote!(#binding: #private::GuardArguments<#args_ty>));
            let lenient = asking
                .ignore_unknown
                .then(|| quote!(let #binding = #binding.ignoring_unknown();));
            out.unpack = quote! {
                #lenient
                let __guard_args = match __guard_flow.arguments(&__guard_incoming, #binding) {
                    ::core::result::Result::Ok(args) => args,
                    ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
                };
            };
            out.rebind.push(
                quote!(let #pat: #ty = #rmcp::handler::server::wrapper::Parameters(__guard_args);),
            );
        } else {
            out.params.push(quote!(#binding: #ty));
            out.asserts
                .push(quote_spanned!(ty.span()=> #private::assert_extractor::<#ty>();));
            out.rebind.push(quote!(let #pat: #ty = #binding;));
        }
    }
    out
}

/// The flow's first step: a call guard's exposure did not dispatch to this tool ends here,
/// before its arguments are read or its preview runs; every later step takes the
/// `__guard_incoming` this binds.
pub fn dispatched() -> TokenStream {
    quote! {
        let __guard_incoming = match __guard_flow.dispatched() {
            ::core::result::Result::Ok(incoming) => incoming,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
    }
}

/// The steps from the previewed effect (`__guard_shown`) to the accepted answer
/// (`__guard_accepted`), in order: who is calling, the one question, the reply judged.
/// `expected` (the text a type-to-confirm answer must equal) is bound once, so a mistake in
/// it is reported once.
pub fn asked(expected: &TokenStream, rules: &TokenStream) -> TokenStream {
    quote! {
        let __guard_expected = #expected;
        let __guard_caller = match __guard_flow.identify(__guard_shown) {
            ::core::result::Result::Ok(caller) => caller,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_asked = match __guard_flow.ask(__guard_caller, __guard_expected).await {
            ::core::result::Result::Ok(asked) => asked,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_accepted = match __guard_flow.answer(__guard_asked, __guard_expected, #rules).await {
            ::core::result::Result::Ok(accepted) => accepted,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
    }
}

/// The check that the arguments type derives `ToolArgs`, if the handler takes arguments.
pub fn assert_parameters(shape: &Shape, private: &TokenStream) -> Option<TokenStream> {
    let (_, params_ty, args_ty) = shape.params.as_ref()?;
    Some(quote_spanned!(params_ty.span()=> #private::assert_parameters::<#params_ty, #args_ty>();))
}

/// The author's body, run with the patterns bound again, as an expression of the handler's
/// return type.
pub fn body(tool_fn: &ImplItemFn, rebind: &[TokenStream]) -> TokenStream {
    let output = match &tool_fn.sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    let stmts = &tool_fn.block.stmts;
    quote! {
        (async move || -> #output {
            #(#rebind)*
            #(#stmts)*
        })()
        .await
    }
}

/// Replaces the method's signature with the one rmcp routes (guard's `GuardCall` first, then
/// `params`, returning rmcp's response) and its body with `block`, and claims the tool's name.
pub fn finish(
    mut tool_fn: ImplItemFn,
    params: &[TokenStream],
    block: TokenStream,
    rt: &TokenStream,
) -> TokenStream {
    let private = quote!(#rt::__private);
    let rmcp = quote!(#private::rmcp);
    let receiver = tool_fn.sig.inputs.first().cloned();
    tool_fn.sig.inputs =
        syn::parse_quote!(#receiver, __guard_call: #private::GuardCall, #(#params),*);
    tool_fn.sig.output = syn::parse_quote!(-> ::core::result::Result<#rmcp::model::CallToolResponse, #rmcp::ErrorData>);
    tool_fn.block = syn::parse_quote!({ #block });
    tool_attr::claim(&mut tool_fn, rt);
    quote!(#tool_fn)
}
