//! Collects every error an expansion finds, so the user sees them all in one build.

use std::cell::RefCell;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Errors gathered while checking one item. Must be consumed with [`Ctxt::check`].
pub struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Self {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    pub fn error_spanned_by(&self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    pub fn push(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt used after check")
            .push(error);
    }

    /// All errors as one compile-error token stream, or `Ok` if there were none.
    pub fn check(self) -> Result<(), TokenStream> {
        let errors = self.errors.borrow_mut().take().expect("Ctxt checked twice");
        if errors.is_empty() {
            return Ok(());
        }
        Err(errors.into_iter().map(|e| e.to_compile_error()).collect())
    }
}

impl Ctxt {
    /// The last stage of every macro: `expand` when nothing was reported, else every error
    /// beside what `fallback` re-emits, so one mistake does not cascade.
    pub fn finish(
        self,
        expand: impl FnOnce() -> TokenStream,
        fallback: impl FnOnce() -> TokenStream,
    ) -> TokenStream {
        match self.check() {
            Ok(()) => expand(),
            Err(errors) => {
                let fallback = fallback();
                quote::quote!(#errors #fallback)
            }
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}
