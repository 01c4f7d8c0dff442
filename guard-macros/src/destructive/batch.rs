//! `#[destructive(batch, ...)]`: `max_items`, the handler's `Picked` proof, and the steps of
//! the batch flow. What a batch cannot go with is declared in `crate::options`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{ImplItemFn, spanned::Spanned};

use super::{Options, Shape};
use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    options::MAX_BATCH_ITEMS,
};

/// `max_items = N`: a whole number from 1 to [`MAX_BATCH_ITEMS`].
pub(super) fn max_items_value(cx: &Ctxt, opt: &Opt) -> Option<(u64, Span)> {
    attr::count_value(cx, opt, MAX_BATCH_ITEMS, || {
        format!(
            "`max_items` takes a whole number from 1 to {MAX_BATCH_ITEMS}, e.g. `max_items = 20`: a question offering more items is not read item by item, so a rule matching more must be narrowed"
        )
    })
}

/// A batch handler takes the `Picked` proof, not `Confirmed`.
pub(super) fn check_shape(cx: &Ctxt, f: &ImplItemFn, shape: &Shape) {
    if let Some((_, ty, _)) = &shape.proof {
        cx.error_spanned_by(ty, "a `batch` tool's handler takes `picked: rmcp_guard::batch::Picked`, not `Confirmed<_>`: the human picks items rather than filling a form");
    } else if shape.picked.is_none() {
        cx.error_spanned_by(
            &f.sig,
            "a `batch` tool's handler must take the proof `picked: rmcp_guard::batch::Picked`: only guard can build it, holding only the items the human picked, so the effect cannot reach the others. Add the parameter and end the handler with `picked.act(|item| async move { ... }).await`",
        );
    }
}

/// The flow's steps for a batch: begin with the cap, ask which items, re-check each picked
/// one, then the author's body, whose report is audited item by item.
pub(super) fn steps(
    o: &Options,
    tool_fn: &ImplItemFn,
    asserts: &[TokenStream],
    unpack: &TokenStream,
    preview_call: &TokenStream,
    body: &TokenStream,
    rt: &TokenStream,
) -> TokenStream {
    let private = quote!(#rt::__private);
    let max_items = match o.max_items {
        Some((n, _)) => {
            let n = n as usize;
            quote!(#n)
        }
        None => quote!(#rt::batch::DEFAULT_MAX_ITEMS),
    };
    // Spanned at the handler's return type: anything but the report is refused there.
    let report = match &tool_fn.sig.output {
        syn::ReturnType::Type(_, ty) => {
            let at_ty = crate::krate::respan(private.clone(), ty.span());
            let report = crate::krate::local_at("__guard_report", ty.span());
            quote_spanned!(ty.span()=> #at_ty::batch_report(#report))
        }
        syn::ReturnType::Default => {
            let report = crate::krate::local("__guard_report");
            quote!(#private::batch_report(#report))
        }
    };
    let dispatched = crate::handler::dispatched();
    quote! {
        #(#asserts)*
        let __guard_flow = #private::Flow::<#rt::batch::Picked>::batch(
            #rt::Guarded::guard(self),
            __guard_call,
            __GUARD_SPEC,
        );
        #dispatched
        #unpack
        let __guard_shown = match __guard_flow.begin_batch(__guard_incoming, #preview_call, #max_items) {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_chosen = match __guard_flow.ask_batch(__guard_shown).await {
            ::core::result::Result::Ok(chosen) => chosen,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_confirmed = match __guard_flow.recheck_batch(__guard_chosen, #preview_call).await {
            ::core::result::Result::Ok(picked) => picked,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_report = #body;
        __guard_flow.finish_batch(#report)
    }
}
