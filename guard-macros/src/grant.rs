//! `grant = "10m", grant_calls = 20`: a tool's leave for the human to let their answer cover
//! a counted few later calls on the scope the preview states. Shared by `#[destructive]` and
//! a disclosing `#[read_only]`; what a grant needs and cannot go with is declared in
//! `crate::options`.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;

use crate::{
    attr::{self, Opt},
    ctxt::Ctxt,
    options::MAX_GRANT_CALLS,
};

/// The grant a tool declares, as read.
#[derive(Default)]
pub struct Grant {
    /// `grant = "10m"`: how long a grant lasts (seconds), and where it was written.
    within: Option<(u64, Span)>,
    /// `grant_calls = 20`: how many more calls it covers, and where.
    calls: Option<(u64, Span)>,
}

impl Grant {
    /// Reads `grant` or `grant_calls`; false for any other option.
    pub fn apply(&mut self, cx: &Ctxt, opt: &Opt) -> bool {
        match opt.key.to_string().as_str() {
            "grant" => {
                self.within = attr::duration_value(cx, opt, &attr::GRANT)
                    .map(|secs| (secs, opt.value.span()));
            }
            "grant_calls" => self.calls = calls_value(cx, opt),
            _ => return false,
        }
        true
    }

    /// Where `grant = ...` was written, once both halves read.
    pub fn span(&self) -> Option<Span> {
        self.calls.and(self.within).map(|(_, span)| span)
    }

    /// The `ToolSpec`'s `grant`: an `Option<GrantSpec>` literal.
    pub fn spec(&self, private: &TokenStream) -> TokenStream {
        match (self.within, self.calls) {
            (Some((secs, _)), Some((calls, _))) => {
                let calls = calls as u32;
                quote!(::core::option::Option::Some(#private::GrantSpec {
                    within: ::core::time::Duration::from_secs(#secs),
                    calls: #calls,
                }))
            }
            _ => quote!(::core::option::Option::None),
        }
    }
}

/// `grant_calls = N`: a whole number from 1 to [`MAX_GRANT_CALLS`].
fn calls_value(cx: &Ctxt, opt: &Opt) -> Option<(u64, Span)> {
    attr::count_value(cx, opt, MAX_GRANT_CALLS, || {
        format!(
            "`grant_calls` takes a whole number from 1 to {MAX_GRANT_CALLS}, e.g. `grant_calls = 20`: a grant covers a counted few calls; for more, the human opens another"
        )
    })
}
