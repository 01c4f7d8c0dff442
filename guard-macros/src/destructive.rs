//! `#[destructive(...)]`: parse the options, check the handler's shape, and expand the
//! method into guard's call flow around the author's body.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Expr, FnArg, Ident, ImplItemFn, ext::IdentExt, spanned::Spanned};

mod batch;

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    grant,
    handler::{self, Shape},
    krate, options, stand_in, tool_attr,
};

#[derive(Clone, Copy, PartialEq)]
enum ConfirmBy {
    Form,
    Checkbox,
    TypeToConfirm,
}

#[derive(Default)]
struct Options {
    confirm: Option<(ConfirmBy, Span)>,
    form: Option<Expr>,
    target: Option<Ident>,
    preview: Option<Expr>,
    /// `message`, `validate`, `timeout`, `on_decline`, `on_cancel`, `crate`.
    asking: handler::Asking,
    idempotent: bool,
    /// `approve = "url"`: the human approves on guard's page.
    approve: Option<Span>,
    approvers: Option<(u8, Span)>,
    secret: Option<(String, Span)>,
    /// `batch`: the human picks which of the preview's items the effect touches.
    batch: Option<Span>,
    max_items: Option<(u64, Span)>,
    /// `undo = Self::undo_fn`: the effect can be undone for a while, by its owner.
    undo: Option<Expr>,
    /// `undo_within = "10m"`, in seconds, and where it was written.
    undo_within: Option<(u64, Span)>,
    /// `purge = Self::purge_fn`: what makes the effect final when the window closes.
    purge: Option<Expr>,
    /// `defer = "2m"`: the confirmed effect waits this long (seconds), and where it was written.
    defer: Option<(u64, Span)>,
    /// `grant = "10m", grant_calls = 20`: what a grant the human opens may cover.
    grant: grant::Grant,
}

pub fn expand(attr: TokenStream, f: ImplItemFn) -> TokenStream {
    if let Some((error, is_method)) = misplaced(&f) {
        // Nothing else about this item can be judged: report the one mistake and keep it.
        let error = error.to_compile_error();
        if is_method {
            let own = tool_attr::own_fn_adding_nothing(&f.sig.ident);
            let kept = stand_in::with_errors(error, f);
            return quote!(#kept #own);
        }
        return quote!(#error #f);
    }
    let cx = Ctxt::new();
    let options = parse_options(&cx, attr);
    let shape = check(&cx, &options, &f);
    let mut tool_fn = f.clone();
    let hints = tool_attr::destructive_hints(options.idempotent);
    tool_attr::set_hints(&cx, &mut tool_fn, "destructive", hints);
    cx.finish(
        || {
            generate(
                &options,
                &shape,
                tool_fn,
                &krate::path(options.asking.krate.as_ref()),
            )
        },
        || {
            let own = tool_attr::own_fn_adding_nothing(&f.sig.ident);
            let kept = stand_in::with_errors(TokenStream::new(), f);
            quote!(#kept #own)
        },
    )
}

/// `#[destructive]` twice, or on something that is not a method taking `self`; and
/// whether the item is a method (so a routable stand-in can replace it).
fn misplaced(f: &ImplItemFn) -> Option<(syn::Error, bool)> {
    let is_method = matches!(f.sig.inputs.first(), Some(FnArg::Receiver(_)));
    if !is_method {
        return Some((
            syn::Error::new_spanned(
                &f.sig.ident,
                "`#[destructive]` goes on a tool method (`async fn name(&self, ...)` with `#[tool]` below it) inside a `#[tool_router]` impl block, not on a free function or an associated function without `&self`",
            ),
            false,
        ));
    }
    let other = f
        .attrs
        .iter()
        .find(|a| tool_attr::is_attr(a, "destructive"))?;
    Some((
        syn::Error::new_spanned(
            other,
            "`#[destructive]` appears twice on this tool: keep one and merge the options into it",
        ),
        true,
    ))
}

fn parse_options(cx: &Ctxt, attr: TokenStream) -> Options {
    let mut o = Options::default();
    let Some(opts) = options::parse(cx, attr, &options::DESTRUCTIVE) else {
        // The syntax error is reported; missing-option errors would only be noise.
        return o;
    };
    for opt in &opts {
        apply(cx, &mut o, opt);
    }
    check_options(cx, &o);
    options::check_rules(cx, &options::DESTRUCTIVE, &opts);
    o
}

/// Rules that read the options' values (the declaration holds those between options):
/// what must be present, and what goes with a kind of confirmation.
fn check_options(cx: &Ctxt, o: &Options) {
    if o.preview.is_none() {
        cx.push(syn::Error::new(
            Span::call_site(),
            "`#[destructive]` needs `preview = path::to::fn`: the human must see the concrete effect (the resolved target, the counts, what disappears) before confirming, and guard re-runs it to refuse if the target changed. Add `preview = Self::preview_...`",
        ));
    }
    if let (Some((ConfirmBy::TypeToConfirm, _)), Some(span)) = (o.confirm, o.grant.span()) {
        cx.push(syn::Error::new(span, "`grant` cannot go with `confirm = \"type_to_confirm\"`: a retyped name is the human's attention to one target, and a grant would let later calls skip it. Keep asking each time (remove `grant`), or use `confirm = \"checkbox\"` if a grant is right for this tool"));
    }
    if o.batch.is_some() {
        // The question is the list of items: the options of other questions are reported
        // as not applying.
        return;
    }
    match &o.confirm {
        Some((ConfirmBy::TypeToConfirm, span)) if o.target.is_none() => cx.push(syn::Error::new(
            *span,
            "`confirm = \"type_to_confirm\"` needs `target = <argument field>`: the `String` argument the human must retype, e.g. `target = table`",
        )),
        None if o.form.is_none() => cx.push(syn::Error::new(
            Span::call_site(),
            "say how the human confirms: `confirm = \"checkbox\"`, `confirm = \"type_to_confirm\"`, or `form = YourForm`",
        )),
        _ => {}
    }
    if let Some(target) = &o.target
        && !matches!(o.confirm, Some((ConfirmBy::TypeToConfirm, _)))
    {
        cx.error_spanned_by(
            target,
            "`target` is what the human retypes, so it goes with `confirm = \"type_to_confirm\"`",
        );
    }
}

fn apply(cx: &Ctxt, o: &mut Options, opt: &Opt) {
    if o.asking.apply(cx, opt) || o.grant.apply(cx, opt) {
        return;
    }
    match opt.key.to_string().as_str() {
        "confirm" => {
            o.confirm = attr::string_value(cx, opt).and_then(|s| {
                let span = opt.value.span();
                match s.as_str() {
                    "checkbox" => Some((ConfirmBy::Checkbox, span)),
                    "type_to_confirm" => Some((ConfirmBy::TypeToConfirm, span)),
                    other => {
                        cx.error_spanned_by(&opt.value, format!("unknown confirm kind `{other}`; use \"checkbox\" or \"type_to_confirm\""));
                        None
                    }
                }
            })
        }
        "form" => o.form = attr::expr_value(cx, opt, "YourForm").cloned(),
        "target" => match attr::expr_value(cx, opt, "argument_field") {
            Some(Expr::Path(p)) if p.path.get_ident().is_some() => o.target = p.path.get_ident().cloned(),
            Some(other) => cx.error_spanned_by(other, "`target` names a field of the tool's arguments, e.g. `target = table`"),
            None => {}
        },
        "preview" => o.preview = attr::expr_value(cx, opt, "Self::preview_fn").cloned(),
        "idempotent" => o.idempotent = attr::flag_value(cx, opt),
        "approve" => o.approve = approve_value(cx, opt),
        "approvers" => o.approvers = approvers_value(cx, opt),
        "batch" => o.batch = attr::flag_value(cx, opt).then(|| opt.key.span()),
        "max_items" => o.max_items = batch::max_items_value(cx, opt),
        "undo" => o.undo = attr::expr_value(cx, opt, "Self::undo_fn").cloned(),
        "undo_within" => {
            o.undo_within = attr::duration_value(cx, opt, &attr::UNDO_WITHIN)
                .map(|secs| (secs, opt.value.span()))
        }
        "purge" => o.purge = attr::expr_value(cx, opt, "Self::purge_fn").cloned(),
        "defer" => {
            o.defer = attr::duration_value(cx, opt, &attr::DEFER)
                .map(|secs| (secs, opt.value.span()))
        }
        "secret" => {
            o.secret = attr::string_value(cx, opt).and_then(|label| {
                if label.trim().is_empty() {
                    cx.error_spanned_by(&opt.value, "`secret` is the label the page shows above the password field, e.g. `secret = \"Deploy token\"`; it cannot be empty");
                    None
                } else {
                    Some((label, opt.value.span()))
                }
            })
        }
        _ => {}
    }
}

/// The `ToolSpec`'s `approval`: an `Option<ApprovalSpec>` literal, one approver by default.
pub(crate) fn approval_spec(
    approve: Option<Span>,
    approvers: Option<(u8, Span)>,
    secret: Option<&str>,
    private: &TokenStream,
) -> TokenStream {
    if approve.is_none() {
        return quote!(::core::option::Option::None);
    }
    let approvers = approvers.map_or(1, |(n, _)| n);
    let secret = handler::opt_str(secret);
    quote!(::core::option::Option::Some(#private::ApprovalSpec { approvers: #approvers, secret: #secret }))
}

/// `approve = "url"`: where it was written.
pub(crate) fn approve_value(cx: &Ctxt, opt: &Opt) -> Option<Span> {
    let mode = attr::string_value(cx, opt)?;
    if mode == "url" {
        return Some(opt.value.span());
    }
    cx.error_spanned_by(&opt.value, format!("unknown approval mode `{mode}`; the one mode is \"url\" (the human approves on guard's approval page); for a form in the client, leave `approve` out"));
    None
}

/// `approvers = N`: a whole number from 1 to [`options::MAX_APPROVERS`].
pub(crate) fn approvers_value(cx: &Ctxt, opt: &Opt) -> Option<(u8, Span)> {
    let n = match &opt.value {
        Some(Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        })) => n.base10_parse::<u64>().ok(),
        _ => None,
    };
    let span = opt.value.span();
    match n {
        Some(n @ 1..) if n <= options::MAX_APPROVERS => Some((n as u8, span)),
        Some(0) => {
            cx.error_spanned_by(&opt.value, "`approvers = 0` would let the call run with nobody approving; write `approvers = 1` (the requester approves on the page) or `approvers = 2` (two other people)");
            None
        }
        _ => {
            cx.error_spanned_by(
                opt.value
                    .as_ref()
                    .map_or(&opt.key as &dyn quote::ToTokens, |v| {
                        v as &dyn quote::ToTokens
                    }),
                format!(
                    "`approvers` takes a whole number from 1 to {}, e.g. `approvers = 2`",
                    options::MAX_APPROVERS
                ),
            );
            None
        }
    }
}

/// The handler's shape, with every mistake in it reported. Without `#[tool]` below us
/// (missing, or already expanded above) the signature is not the author's; the placement
/// error that `set_hints` reports is the one to fix first.
fn check(cx: &Ctxt, o: &Options, f: &ImplItemFn) -> Shape {
    if !tool_attr::has_tool(f) {
        return Shape::NONE;
    }
    let shape = handler::read(
        cx,
        f,
        &handler::Attr {
            name: "destructive",
            proof: "Confirmed",
            noun: "proof",
            waits: "the effect",
        },
    );
    if let Some(other) = tool_attr::find(f, &["idempotent"]) {
        cx.error_spanned_by(other, "on a guarded tool, declare idempotency as an option: `#[destructive(idempotent, ...)]`");
    }
    if o.batch.is_some() {
        batch::check_shape(cx, f, &shape);
    } else if let Some((_, ty)) = &shape.picked {
        cx.error_spanned_by(ty, "`Picked` is the proof of a batch question: add `batch` to `#[destructive(...)]` (the preview then returns a `rmcp_guard::batch::Batch`), or take `Confirmed<YourForm>` for a single target");
    } else if shape.proof.is_none() {
        cx.error_spanned_by(
            &f.sig,
            "a `#[destructive]` handler must take the proof `confirmed: Confirmed<YourForm>`: only guard can build it, after the human accepted, so the effect cannot run unconfirmed. Add the parameter (use `rmcp_guard::forms::Checkbox` or `TypeToConfirm` if you need no custom form)",
        );
    }
    if o.defer.is_some() && o.batch.is_none() {
        // A batch with `defer` is refused at the option; its `Picked` is no extractor.
        check_deferred_shape(cx, f, &shape);
    }
    if o.target.is_some() && shape.params.is_none() {
        cx.error_spanned_by(
            &f.sig,
            "`target` names an argument field, but the handler takes no `Parameters<_>`",
        );
    }
    shape
}

/// A deferred handler runs when its call comes due, after the request ended: it can take
/// only what guard stores (the arguments) and builds (the proof), no request extractor.
fn check_deferred_shape(cx: &Ctxt, f: &ImplItemFn, shape: &Shape) {
    let at = |role: Option<usize>, i: usize| role == Some(i);
    for (i, arg) in f.sig.inputs.iter().enumerate() {
        let FnArg::Typed(pt) = arg else { continue };
        if at(shape.params.as_ref().map(|p| p.0), i) || at(shape.proof.as_ref().map(|p| p.0), i) {
            continue;
        }
        cx.error_spanned_by(&pt.ty, "a tool with `defer` runs its handler when the call comes due, after the request ended, so it cannot take what comes with a request: take only `Parameters<YourArgs>` and `Confirmed<YourForm>`, and reach the rest through `&self`");
    }
}

/// The expansion: one rmcp tool method that runs guard's flow and then the author's body,
/// inlined. There is no separate body method, so no other code can hand the body a proof.
fn generate(o: &Options, shape: &Shape, tool_fn: ImplItemFn, rt: &TokenStream) -> TokenStream {
    let private = quote!(#rt::__private);
    let (confirmed_at, confirmed_ty) = match (&shape.proof, &shape.picked) {
        (Some((at, ty, _)), _) => (*at, ty.clone()),
        (None, Some((at, ty))) => (*at, ty.clone()),
        (None, None) => unreachable!("the handler's shape was checked"),
    };

    // The tool method takes every parameter but the proof, plus guard's context first. The
    // author's own patterns are bound again inside the body, once the proof exists.
    let handler::Rewritten {
        params,
        rebind,
        mut asserts,
        unpack,
    } = handler::rewrite(
        shape,
        &tool_fn,
        confirmed_at,
        "__guard_confirmed",
        &o.asking,
        &private,
    );

    let preview = o.preview.as_ref().expect("checked");
    // Called through a function whose bounds spell the expected signature, so a wrong
    // preview is one error at `preview = ...` that names it.
    // Named at the author's `preview = ...`, so a wrong signature is reported there.
    let (with_args, no_args) = match o.batch {
        Some(_) => ("batch_preview", "batch_preview_no_args"),
        None => ("preview", "preview_no_args"),
    };
    let with_args = Ident::new(with_args, preview.span());
    let no_args = Ident::new(no_args, preview.span());
    let at_preview = krate::respan(private.clone(), preview.span());
    let preview_call = if shape.params.is_some() {
        let args = krate::local_at("__guard_args", preview.span());
        quote_spanned!(preview.span()=> #at_preview::#with_args(#preview, self, &#args).await)
    } else {
        quote_spanned!(preview.span()=> #at_preview::#no_args(#preview, self).await)
    };
    let confirm_kind = match o.confirm.map(|c| c.0).unwrap_or(ConfirmBy::Form) {
        _ if o.batch.is_some() => quote!(Pick),
        ConfirmBy::Form => quote!(Form),
        ConfirmBy::Checkbox => quote!(Checkbox),
        ConfirmBy::TypeToConfirm => quote!(TypeToConfirm),
    };
    let expected = match &o.target {
        Some(target) => {
            let at_target = krate::respan(private.clone(), target.span());
            let args = krate::local_at("__guard_args", target.span());
            quote_spanned! {target.span()=>
                ::core::option::Option::Some(#at_target::TargetText::target_text(&#args.#target))
            }
        }
        None => quote!(::core::option::Option::None),
    };
    let rules = o
        .asking
        .rules(shape.proof.as_ref().map(|(_, _, form)| form), &private);
    let spec_fields = o.asking.spec_fields(o.asking.message.as_deref());
    let tool_name = tool_attr::routed_name(&tool_fn);
    let approval = approval_spec(
        o.approve,
        o.approvers,
        o.secret.as_ref().map(|(s, _)| s.as_str()),
        &private,
    );

    asserts.push(quote!(#private::assert_guarded::<Self>();));
    asserts.extend(handler::assert_parameters(shape, &private));
    if let (Some(target), Some((_, _, args_ty))) = (&o.target, &shape.params) {
        // The model must send the target: one it may leave out is `""` and matches `""`.
        let at_target = krate::respan(private.clone(), target.span());
        let name = target.unraw().to_string();
        asserts.push(quote_spanned! {target.span()=>
            const _: () = #at_target::assert_target_required(
                <#args_ty as #at_target::ToolArgsDerived>::DEFAULTED,
                #name,
            );
        });
    }
    if let (Some(form), Some((_, _, form_ty))) = (&o.form, &shape.proof) {
        asserts
            .push(quote_spanned!(form.span()=> #private::assert_same_form::<#form, #form_ty>();));
    }

    let body = handler::body(&tool_fn, &rebind);
    let (finish, undo_within, mut adds) = undo(o, &tool_fn, &body, &mut asserts, &private);
    let defer = match o.defer {
        Some((secs, _)) => {
            quote!(::core::option::Option::Some(::core::time::Duration::from_secs(#secs)))
        }
        None => quote!(::core::option::Option::None),
    };

    let grant = o.grant.spec(&private);
    if let (Some(span), Some((_, _, form_ty))) = (o.grant.span(), &shape.proof) {
        // The question adds the grant's choice beside the form's own fields.
        let at_grant = krate::respan(private.clone(), span);
        asserts.push(quote_spanned! {span=>
            const _: () = #at_grant::assert_grant_form(<#form_ty as #rt::Form>::SPEC);
        });
    }

    let spec = quote! {
        const __GUARD_SPEC: &#private::ToolSpec = &#private::ToolSpec {
            name: #tool_name,
            confirm: #private::ConfirmKind::#confirm_kind,
            #spec_fields
            approval: #approval,
            undo_within: #undo_within,
            defer: #defer,
            grant: #grant,
        };
    };
    let mut run = TokenStream::new();
    let dispatched = handler::dispatched();
    let asked = handler::asked(&expected, &rules);
    let steps = match (&shape.proof, o.batch) {
        (Some((_, _, form_ty)), None) => {
            let then = if o.defer.is_some() {
                let deferred = Deferred {
                    tool_fn: &tool_fn,
                    shape,
                    form_ty,
                    spec: &spec,
                    preview_call: &preview_call,
                    expected: &expected,
                    rules: &rules,
                    body: &body,
                    private: &private,
                };
                let (method, deferred_route) = deferred.run();
                run = method;
                adds = vec![deferred_route];
                asserts.push(quote!(const _: () = #private::assert_defer_store();));
                quote!(return __guard_flow.defer(__guard_accepted, #preview_call).await;)
            } else {
                quote! {
                    let (__guard_confirmed, __guard_owner) = match __guard_flow.recheck(__guard_accepted, #preview_call).await {
                        ::core::result::Result::Ok(rechecked) => rechecked.confirmed(),
                        ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
                    };
                    #finish
                }
            };
            asserts
                .push(quote_spanned!(confirmed_ty.span()=> #private::assert_form::<#form_ty>();));
            // The form's description decides its roles, at compile time, in a `const` item.
            // A checkbox or typed-name question first needs a form the derive counted that
            // field in, so a form without one is refused with a trait's message.
            let at_proof = krate::respan(rt.clone(), confirmed_ty.span());
            let roles = match o.confirm.map(|c| c.0) {
                Some(ConfirmBy::Checkbox) => quote_spanned! {confirmed_ty.span()=>
                    const _: () = <#form_ty as #at_proof::__private::CheckboxForm>::ROLES;
                },
                Some(ConfirmBy::TypeToConfirm) => quote_spanned! {confirmed_ty.span()=>
                    const _: () = <#form_ty as #at_proof::__private::TypeToConfirmForm>::ROLES;
                },
                _ => quote_spanned! {confirmed_ty.span()=>
                    const _: () = #at_proof::__private::assert_roles(
                        <#form_ty as #at_proof::Form>::SPEC,
                        #at_proof::__private::ConfirmKind::#confirm_kind,
                    );
                },
            };
            quote! {
                #roles
                #(#asserts)*
                let __guard_flow = #private::Flow::<#form_ty>::new(
                    #rt::Guarded::guard(self),
                    __guard_call,
                    __GUARD_SPEC,
                );
                #dispatched
                #unpack
                let __guard_shown = match __guard_flow.begin(__guard_incoming, #preview_call) {
                    ::core::result::Result::Ok(shown) => shown,
                    ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
                };
                #asked
                #then
            }
        }
        _ => batch::steps(o, &tool_fn, &asserts, &unpack, &preview_call, &body, rt),
    };

    let block = quote! {
        #spec
        #steps
    };
    let own = tool_attr::own_fn_adding(&tool_fn.sig.ident, rt, &adds);
    let tool = handler::finish(tool_fn, &params, block, rt);
    quote!(#tool #run #own)
}

/// What the hidden run of a deferred tool is made of.
struct Deferred<'a> {
    tool_fn: &'a ImplItemFn,
    shape: &'a Shape,
    form_ty: &'a syn::Type,
    spec: &'a TokenStream,
    preview_call: &'a TokenStream,
    expected: &'a TokenStream,
    rules: &'a TokenStream,
    body: &'a TokenStream,
    private: &'a TokenStream,
}

impl Deferred<'_> {
    /// A tool with `defer`: its method stores the confirmed call (`Flow::defer`) and never
    /// runs the body; the body runs in a hidden method that takes a `Due`, which only a
    /// runner builds after claiming the call, goes through `RunFlow` (the stored arguments,
    /// the preview compared with what the human saw, the stored answer revalidated) and only
    /// then gets the proof. The tool's hidden deferred-run route calls the method: the
    /// second value adds that route where the router is built, as an undo's is.
    fn run(&self) -> (TokenStream, TokenStream) {
        let Deferred {
            tool_fn,
            shape,
            form_ty,
            spec,
            preview_call,
            expected,
            rules,
            body,
            private,
        } = self;
        let run = quote::format_ident!("__guard_run_{}", tool_fn.sig.ident.unraw());
        let unpack = match &shape.params {
            Some((_, _, args_ty)) => quote! {
                let __guard_args: #args_ty = match __guard_flow.arguments() {
                    ::core::result::Result::Ok(args) => args,
                    ::core::result::Result::Err(ended) => return ended,
                };
            },
            None => TokenStream::new(),
        };
        let method = quote! {
            #[doc(hidden)]
            fn #run(&self, __guard_due: #private::Due) -> #private::RunFuture<'_> {
                ::std::boxed::Box::pin(async move {
                    #spec
                    let __guard_flow = #private::RunFlow::<#form_ty>::new(__guard_due, __GUARD_SPEC);
                    #unpack
                    let __guard_confirmed = match __guard_flow.confirm(#preview_call, #expected, #rules) {
                        ::core::result::Result::Ok(confirmed) => confirmed,
                        ::core::result::Result::Err(ended) => return ended,
                    };
                    __guard_flow.finish(#body)
                })
            }
        };
        let name = tool_attr::routed_name(tool_fn);
        let route = quote! {
            let router = #private::deferred_route::<Self, _>(router, #name, true, Self::#run);
        };
        (method, route)
    }
}

/// A tool with `undo = ...`: the handler's result goes through `finish_reversible` (which
/// takes only `Reversible` results, so the undo data cannot be left out), the window's
/// length goes in the spec, the undo and purge functions are checked at their options, and
/// the tool's hidden undo route, which calls them, is added where the router is built (the
/// last value). Without: `finish`, which takes no `Reversible` (it is no tool result), so a
/// handler cannot pretend to be undoable.
fn undo(
    o: &Options,
    tool_fn: &ImplItemFn,
    body: &TokenStream,
    asserts: &mut Vec<TokenStream>,
    private: &TokenStream,
) -> (TokenStream, TokenStream, Vec<TokenStream>) {
    let (Some(undo), Some((secs, _))) = (&o.undo, o.undo_within) else {
        let finish = quote!(__guard_flow.finish(#body));
        return (finish, quote!(::core::option::Option::None), Vec::new());
    };
    let at_undo = krate::respan(private.clone(), undo.span());
    asserts.push(quote_spanned!(undo.span()=> #at_undo::assert_undo::<Self, _>(&#undo);));
    let purge = match &o.purge {
        Some(purge) => {
            let at_purge = krate::respan(private.clone(), purge.span());
            asserts
                .push(quote_spanned!(purge.span()=> #at_purge::assert_purge::<Self, _>(&#purge);));
            quote!(::core::option::Option::Some(#purge))
        }
        None => quote!(::core::option::Option::None::<#private::NoPurge<Self>>),
    };
    let output_span = match &tool_fn.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => tool_fn.sig.span(),
    };
    let at_output = krate::respan(private.clone(), output_span);
    // Without a store, the flow purges through the tool's own undo route at once.
    let own = tool_attr::own_fn(&tool_fn.sig.ident);
    let finish = quote_spanned! {output_span=>
        __guard_flow.finish_reversible(self, __guard_owner, #at_output::reversible(#body), Self::#own).await
    };
    let name = tool_attr::routed_name(tool_fn);
    let route = quote! {
        let router = #private::undo_route::<Self, _, _>(router, #name, #undo, #purge);
    };
    let within = quote!(::core::option::Option::Some(::core::time::Duration::from_secs(#secs)));
    (finish, within, vec![route])
}
