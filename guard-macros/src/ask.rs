//! `#[ask(...)]`: a tool that collects input from the human without a destructive effect.
//! The handler takes `Answered<YourForm>`, which only guard's flow builds after a real accept,
//! with the same flat-form checks at compile time and the same revalidation on the server as
//! a `#[destructive]` form; decline and cancel end the call as natural results.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Expr, FnArg, ImplItemFn, spanned::Spanned};

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    handler::{self, Shape},
    krate, options, stand_in, tool_attr,
};

#[derive(Default)]
struct Options {
    form: Option<Expr>,
    question: Option<Expr>,
    /// `message`, `validate`, `timeout`, `on_decline`, `on_cancel`, `crate`.
    asking: handler::Asking,
}

pub fn expand(attr: TokenStream, f: ImplItemFn) -> TokenStream {
    if let Some(misplaced) = handler::not_a_method(&f, "#[ask]") {
        return misplaced;
    }
    let cx = Ctxt::new();
    let options = parse_options(&cx, attr);
    let shape = check(&cx, &f);
    let mut tool_fn = f.clone();
    tool_attr::set_hints(&cx, &mut tool_fn, "ask", tool_attr::ask_hints());
    cx.finish(
        || {
            generate(
                &options,
                &shape,
                tool_fn,
                &krate::path(options.asking.krate.as_ref()),
            )
        },
        || stand_in::with_errors(TokenStream::new(), f),
    )
}

fn parse_options(cx: &Ctxt, attr: TokenStream) -> Options {
    let mut o = Options::default();
    let Some(opts) = options::parse(cx, attr, &options::ASK) else {
        return o;
    };
    // A `message` refused for showing nothing is reported as that, not as missing.
    let wrote_message = opts.iter().any(|opt| opt.key == "message");
    for opt in opts {
        apply(cx, &mut o, opt);
    }
    if !wrote_message && o.question.is_none() {
        cx.push(syn::Error::new(
            Span::call_site(),
            "`#[ask]` needs the text the human reads above the form: `message = \"...\"`, or `question = Self::question_fn` (a `fn(&self, &Args) -> String`) to build it from the arguments",
        ));
    }
    o
}

fn apply(cx: &Ctxt, o: &mut Options, opt: Opt) {
    if o.asking.apply(cx, &opt) {
        return;
    }
    match opt.key.to_string().as_str() {
        "form" => o.form = attr::expr_value(cx, &opt, "YourForm").cloned(),
        "question" => o.question = attr::expr_value(cx, &opt, "Self::question_fn").cloned(),
        _ => {}
    }
}

fn check(cx: &Ctxt, f: &ImplItemFn) -> Shape {
    if !tool_attr::has_tool(f) {
        return Shape::NONE;
    }
    if let Some(other) = tool_attr::find(f, &["destructive", "ask"]) {
        cx.error_spanned_by(other, "`#[ask]` collects input and `#[destructive]` confirms an effect: a tool takes one of them, once");
    }
    let shape = handler::read(
        cx,
        f,
        &handler::Attr {
            name: "ask",
            proof: "Answered",
            noun: "answer",
            waits: "the handler",
        },
    );
    if let Some((_, ty)) = &shape.picked {
        cx.error_spanned_by(ty, "`Picked` is the proof of a `#[destructive(batch)]` question; an `#[ask]` handler takes `Answered<YourForm>`");
    }
    if shape.proof.is_none() {
        cx.error_spanned_by(
            &f.sig,
            "an `#[ask]` handler must take the answer `answered: Answered<YourForm>`: only guard can build it, after the human accepted and the answer was revalidated. Add the parameter",
        );
    }
    shape
}

/// One assertion per parameter besides the arguments and the answer that its type is a read
/// handle, spanned at the type as `#[read_only]`'s are: an `#[ask]` tool is published as not
/// destructive and runs with no preview and no re-check, so it takes no handle that writes.
/// The check is on the type the compiler resolves, so no alias, renamed import, full path or
/// wrapper (`Option<_>`, `Extension<_>`) of a write handle passes.
fn read_handle_checks(shape: &Shape, f: &ImplItemFn, rt: &TokenStream) -> Vec<TokenStream> {
    let roles = [
        shape.params.as_ref().map(|(at, _, _)| *at),
        shape.proof.as_ref().map(|(at, _, _)| *at),
    ];
    f.sig
        .inputs
        .iter()
        .enumerate()
        .filter(|(i, _)| !roles.contains(&Some(*i)))
        .filter_map(|(_, arg)| match arg {
            FnArg::Typed(pt) => Some(&*pt.ty),
            FnArg::Receiver(_) => None,
        })
        .map(|ty| {
            let at_ty = krate::respan(rt.clone(), ty.span());
            quote_spanned!(ty.span()=> #at_ty::__private::assert_ask_handle::<#ty>();)
        })
        .collect()
}

fn generate(o: &Options, shape: &Shape, tool_fn: ImplItemFn, rt: &TokenStream) -> TokenStream {
    let private = quote!(#rt::__private);
    let Some((answered_at, answered_ty, form_ty)) = &shape.proof else {
        unreachable!("the handler's shape was checked")
    };
    let handler::Rewritten {
        params,
        rebind,
        mut asserts,
        unpack,
    } = handler::rewrite(
        shape,
        &tool_fn,
        *answered_at,
        "__guard_answered",
        &o.asking,
        &private,
    );
    asserts.push(quote!(#private::assert_guarded::<Self>();));
    asserts.extend(handler::assert_parameters(shape, &private));
    asserts.extend(read_handle_checks(shape, &tool_fn, rt));
    asserts.push(quote_spanned!(answered_ty.span()=> #private::assert_form::<#form_ty>();));
    if let Some(form) = &o.form {
        asserts
            .push(quote_spanned!(form.span()=> #private::assert_same_form::<#form, #form_ty>();));
    }
    let tool_name = tool_attr::routed_name(&tool_fn);
    let question = match &o.question {
        Some(q) => {
            let at = krate::respan(private.clone(), q.span());
            if shape.params.is_some() {
                let args = krate::local_at("__guard_args", q.span());
                quote_spanned!(q.span()=> #at::question(#q, self, &#args))
            } else {
                quote_spanned!(q.span()=> #at::question_no_args(#q, self))
            }
        }
        None => {
            let message = o.asking.message.as_deref().unwrap_or_default();
            quote!(::std::string::String::from(#message))
        }
    };
    // With a `question`, a `message` is the header above it; alone, it is the question.
    let header = o.question.as_ref().and(o.asking.message.as_deref());
    let spec_fields = o.asking.spec_fields(header);
    let rules = o.asking.rules(Some(form_ty), &private);
    let at_answer = krate::respan(rt.clone(), answered_ty.span());
    let body = handler::body(&tool_fn, &rebind);
    let dispatched = handler::dispatched();
    let asked = handler::asked(&quote!(::core::option::Option::None), &rules);
    let block = quote! {
        const __GUARD_SPEC: &#private::ToolSpec = &#private::ToolSpec {
            name: #tool_name,
            confirm: #private::ConfirmKind::Form,
            #spec_fields
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        // The form's description decides its roles, at compile time: a form that asks for a
        // retyped target belongs to a `#[destructive]` tool.
        const _: () = #at_answer::__private::assert_ask_roles(<#form_ty as #at_answer::Form>::SPEC);
        #(#asserts)*
        let __guard_flow = #private::Flow::<#form_ty>::new(
            #rt::Guarded::guard(self),
            __guard_call,
            __GUARD_SPEC,
        );
        #dispatched
        #unpack
        let __guard_shown = match __guard_flow.begin(__guard_incoming, #private::asked(#tool_name, #question)) {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        #asked
        let __guard_answered = match __guard_flow.answered(__guard_accepted).await {
            ::core::result::Result::Ok(answered) => answered,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        __guard_flow.finish(#body)
    };
    handler::finish(tool_fn, &params, block, rt)
}
