//! The read-handle checks of a `#[read_only]` tool's parameters, which a plain and a
//! disclosing `#[read_only]` both apply: each parameter's type must be a read handle.

use syn::{FnArg, ImplItemFn, Stmt, Type, spanned::Spanned};

/// One statement per typed parameter asserting that its type is a
/// `rmcp_guard::read_handle::ReadHandle`, spanned at the type. The check is on the type the
/// compiler resolves, so an alias, a renamed import or a full path of a write handle fails
/// there too.
pub fn checks(f: &ImplItemFn, rt: &proc_macro2::TokenStream) -> Vec<Stmt> {
    let mut checks = Vec::new();
    for arg in &f.sig.inputs {
        let FnArg::Typed(pt) = arg else { continue };
        let ty = &*pt.ty;
        if let Type::ImplTrait(_) = ty {
            continue;
        }
        let at_ty = crate::krate::respan(rt.clone(), ty.span());
        checks.push(syn::parse_quote_spanned! {ty.span()=>
            #at_ty::__private::assert_read_handle::<#ty>();
        });
    }
    checks
}
