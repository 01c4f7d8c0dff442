//! What `#[operations]` adds to the impl: each prepare and confirm tool rewritten into
//! guard's two-phase flow (the author's body hidden or inlined), each confirm's deferred
//! run, and the `get_operation_result` tool.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{ImplItem, ImplItemFn, spanned::Spanned};

use super::{ConfirmFn, PrepareFn, RESULT_TOOL};
use crate::{
    krate,
    stand_in::hidden,
    tool_attr,
    ty::{is_named, type_arg, typed_args},
};

pub(super) fn generate(
    prepares: &[PrepareFn],
    confirms: &[ConfirmFn],
    rt: &TokenStream,
) -> Vec<ImplItem> {
    let rmcp = quote!(#rt::__private::rmcp);
    let mut out: Vec<ImplItem> = Vec::new();
    for p in prepares {
        let op = p.opts.op.as_ref().expect("checked").value();
        let confirm = confirms
            .iter()
            .find(|c| c.opts.op.as_ref().is_some_and(|o| o.value() == op))
            .expect("paired");
        let name = p.f.sig.ident.clone();
        let tool = tool_attr::routed_name(&p.f);
        let confirm_tool = tool_attr::routed_name(&confirm.f);
        let inner = format_ident!("__guard_{}", name);
        let ttl = p.opts.ttl_secs.expect("checked");
        let scopes = &p.opts.scopes;
        let rate = match p.opts.rate {
            Some((limit, per)) => {
                quote!(::core::option::Option::Some(#rt::ops::Rate { limit: #limit, per: ::core::time::Duration::from_secs(#per) }))
            }
            None => quote!(::core::option::Option::None),
        };
        let mut params = Vec::new();
        let mut forward = Vec::new();
        let mut unpack = Vec::new();
        let payload = p.payload.as_ref().expect("checked");
        let at_payload = krate::respan(rt.clone(), payload.span());
        let mut asserts = vec![
            quote_spanned!(payload.span()=> #at_payload::__private::assert_payload::<#payload>();),
        ];
        for (i, pt) in typed_args(&p.f) {
            if is_named(&pt.ty, "Prepare") {
                forward.push(quote!(&mut __guard_prepare));
                continue;
            }
            let binding = format_ident!("__guard_p{}", i);
            let ty = &pt.ty;
            if let Some(args) = type_arg(ty, "Parameters") {
                asserts.push(
                    quote_spanned!(ty.span()=> #rt::__private::assert_parameters::<#ty, #args>();),
                );
                // Taken raw and deserialised by guard: a wrong shape is guard's refusal.
                params.push(quote!(#binding: #rt::__private::GuardArguments<#args>));
                unpack.push(tool_attr::guard_arguments(
                    rt,
                    &binding,
                    quote!(__GUARD_SPEC.tool),
                    quote!(__GUARD_SPEC.op),
                    p.opts.ignore_unknown,
                ));
            } else {
                params.push(quote!(#binding: #ty));
            }
            forward.push(quote!(#binding));
        }
        let mut tool_fn = p.f.clone();
        let receiver = tool_fn.sig.inputs.first().cloned();
        tool_fn.sig.inputs =
            syn::parse_quote!(#receiver, __guard_call: #rt::__private::GuardCall, #(#params),*);
        tool_fn.sig.output = syn::parse_quote!(-> ::core::result::Result<#rmcp::model::CallToolResponse, #rmcp::ErrorData>);
        tool_fn.block = syn::parse_quote!({
            const __GUARD_SPEC: &#rt::__private::PrepareSpec = &#rt::__private::PrepareSpec {
                tool: #tool,
                op: #op,
                confirm_tool: #confirm_tool,
                ttl: ::core::time::Duration::from_secs(#ttl),
                scopes: &[#(#scopes),*],
                rate: #rate,
            };
            #rt::__private::assert_guarded::<Self>();
            #(#asserts)*
            #(#unpack)*
            let mut __guard_prepare = match #rt::ops::Prepare::begin(#rt::Guarded::guard(self), &__guard_call, __GUARD_SPEC).await {
                ::core::result::Result::Ok(prepare) => prepare,
                ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
            };
            let __guard_checked = Self::#inner(self, #(#forward),*).await;
            __guard_prepare.finish(__guard_checked).await
        });
        tool_attr::claim(&mut tool_fn, rt);
        out.push(ImplItem::Fn(hidden(p.f.clone())));
        out.push(ImplItem::Fn(tool_fn));
    }
    for c in confirms {
        let op = c.opts.op.as_ref().expect("checked").value();
        let prepare = prepares
            .iter()
            .find(|p| p.opts.op.as_ref().is_some_and(|o| o.value() == op))
            .expect("paired");
        let tool = tool_attr::routed_name(&c.f);
        let prepare_tool = tool_attr::routed_name(&prepare.f);
        let scopes = &prepare.opts.scopes;
        let payload = c.payload.as_ref().expect("checked");
        let recheck = c.opts.recheck.as_ref().expect("checked");
        let prepared = prepare.payload.as_ref().expect("checked");
        // Spanned at the confirm's `Approved<_>`: a mismatch is reported there.
        let approved = {
            let prepared = krate::respan(quote!(#prepared), payload.span());
            let approved = krate::local("__guard_approved");
            quote_spanned!(payload.span()=> #rt::__private::same_payload::<#prepared, #payload>(&mut #approved))
        };
        let hook = quote_spanned! {recheck.span()=>
            |__guard_server, __guard_locked| ::std::boxed::Box::pin(#recheck(__guard_server, __guard_locked))
        };
        // The author's body runs inlined, with the one proof the driver approved: there is
        // no body method another tool could hand a proof to.
        let (pat, ty) = typed_args(&c.f)
            .map(|(_, pt)| (pt.pat.clone(), pt.ty.clone()))
            .next()
            .expect("checked: a confirm takes the proof");
        let output = match &c.f.sig.output {
            syn::ReturnType::Default => quote!(()),
            syn::ReturnType::Type(_, ty) => quote!(#ty),
        };
        let stmts = &c.f.block.stmts;
        let operation = tool_attr::guard_arguments(
            rt,
            &format_ident!("__guard_operation"),
            quote!(__GUARD_SPEC.tool),
            quote!(__GUARD_SPEC.op),
            false,
        );
        let defer = match c.opts.defer {
            Some(secs) => {
                quote!(::core::option::Option::Some(::core::time::Duration::from_secs(#secs)))
            }
            None => quote!(::core::option::Option::None),
        };
        let spec = quote! {
            const __GUARD_SPEC: &#rt::__private::ConfirmSpec = &#rt::__private::ConfirmSpec {
                tool: #tool,
                op: #op,
                prepare_tool: #prepare_tool,
                scopes: &[#(#scopes),*],
                defer: #defer,
            };
        };
        let effect = quote! {
            let __guard_effect = (async || -> #output {
                let #pat: #ty = #approved;
                #(#stmts)*
            })()
            .await;
        };
        // The effect of a deferred confirm runs here, when a runner claimed the due call:
        // the intent locked and checked again, the re-check run again, then the proof.
        // Every confirm has one, so a deployment can defer any confirm.
        let run = format_ident!("__guard_run_{}", c.f.sig.ident);
        let declared = c.opts.defer.is_some();
        out.push(syn::parse_quote! {
            #[doc(hidden)]
            fn #run(&self, __guard_due: #rt::__private::Due) -> #rt::__private::RunFuture<'_> {
                ::std::boxed::Box::pin(async move {
                    #spec
                    let mut __guard_approved = match #rt::__private::run_and_recheck::<Self, #prepared>(
                        #rt::Guarded::guard(self),
                        __GUARD_SPEC,
                        __guard_due,
                        self,
                        #hook,
                    ).await {
                        ::core::result::Result::Ok(approved) => approved,
                        ::core::result::Result::Err(ended) => return ended,
                    };
                    #effect
                    __guard_approved.finish_due(__guard_effect).await
                })
            }
        });
        // Its hidden deferred-run route, added where the router is built.
        let route = quote! {
            let router = #rt::__private::deferred_route::<Self, _>(router, #tool, #declared, Self::#run);
        };
        out.push(
            syn::parse2(tool_attr::own_fn_adding(&c.f.sig.ident, rt, &[route]))
                .expect("a function"),
        );
        let mut tool_fn = c.f.clone();
        let receiver = tool_fn.sig.inputs.first().cloned();
        tool_fn.sig.inputs = syn::parse_quote!(#receiver, __guard_call: #rt::__private::GuardCall, __guard_operation: #rt::__private::GuardArguments<#rt::ops::OperationRef>);
        tool_fn.sig.output = syn::parse_quote!(-> ::core::result::Result<#rmcp::model::CallToolResponse, #rmcp::ErrorData>);
        tool_fn.block = syn::parse_quote!({
            #spec
            #rt::__private::assert_guarded::<Self>();
            // Taken raw and deserialised by guard: a wrong shape is guard's refusal.
            #operation
            let mut __guard_approved = match #rt::__private::lock_and_recheck::<Self, #prepared>(
                #rt::Guarded::guard(self),
                &__guard_call,
                __GUARD_SPEC,
                __guard_operation,
                self,
                #hook,
            ).await {
                ::core::result::Result::Ok(approved) => approved,
                ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
            };
            #effect
            __guard_approved.finish(__guard_effect).await
        });
        tool_attr::claim(&mut tool_fn, rt);
        out.push(ImplItem::Fn(tool_fn));
    }
    // The method is named after this impl's first two-phase tool, so a second
    // `#[operations]` impl on the server is reported once, by the trait impl below, rather
    // than as a duplicate method; the tool keeps its name.
    let first = prepares
        .first()
        .map(|p| &p.f.sig.ident)
        .or_else(|| confirms.first().map(|c| &c.f.sig.ident))
        .expect("checked: at least one two-phase tool");
    let result_fn = format_ident!("__guard_{}_of_{}", RESULT_TOOL, first);
    let prepare_tools: Vec<String> = prepares
        .iter()
        .map(|p| tool_attr::routed_name(&p.f))
        .collect();
    let hints = tool_attr::read_only_hints();
    let lookup = tool_attr::guard_arguments(
        rt,
        &format_ident!("__guard_operation"),
        quote!(#RESULT_TOOL),
        quote!(""),
        false,
    );
    let mut result: ImplItemFn = syn::parse_quote! {
        #[#rmcp::tool(
            name = #RESULT_TOOL,
            description = "Did a prepared operation happen? Returns its status (PREPARED, SUBMITTED, EXPIRED or REJECTED), its preview and, once submitted, its result. Call it after a confirm timed out or failed with an unknown result, before retrying.",
            annotations(#hints)
        )]
        async fn #result_fn(
            &self,
            __guard_call: #rt::__private::GuardCall,
            __guard_operation: #rt::__private::GuardArguments<#rt::ops::OperationRef>,
        ) -> ::core::result::Result<#rmcp::model::CallToolResponse, #rmcp::ErrorData> {
            #rt::__private::assert_guarded::<Self>();
            // Taken raw and deserialised by guard: a wrong shape is guard's refusal.
            #lookup
            #rt::__private::get_operation_result(#rt::Guarded::guard(self), &__guard_call, __guard_operation, &[#(#prepare_tools),*]).await
        }
    };
    tool_attr::claim(&mut result, rt);
    out.push(ImplItem::Fn(result));
    out
}
