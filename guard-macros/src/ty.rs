//! Reading the types an author wrote on a handler's parameters and return type. Macros see
//! tokens, not resolved types: these match a path by its last segment (`Parameters<Args>`,
//! `rmcp::handler::server::wrapper::Parameters<Args>`), and the compiler checks the rest
//! through the bounds the expansion asserts.

use syn::{FnArg, GenericArgument, ImplItemFn, PatType, PathArguments, PathSegment, Type};

/// The last segment of `ty`'s path, if it is named `name`.
fn segment<'t>(ty: &'t Type, name: &str) -> Option<&'t PathSegment> {
    let Type::Path(p) = ty else { return None };
    p.path.segments.last().filter(|s| s.ident == name)
}

/// The first type argument of a segment (`Args` of `Parameters<Args>`).
fn first_arg(segment: &PathSegment) -> Option<&Type> {
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// `T` for `&T` and `&mut T`, else `ty` itself.
fn behind_ref(ty: &Type) -> &Type {
    match ty {
        Type::Reference(r) => &r.elem,
        other => other,
    }
}

/// Whether `ty` is a path ending in `name` with no generic arguments (`Picked`).
pub fn is_bare(ty: &Type, name: &str) -> bool {
    segment(ty, name).is_some_and(|s| s.arguments.is_none())
}

/// The type argument of `ty` when its path ends in `name<T>`; a reference is not looked
/// through (a `#[destructive]` handler takes `Parameters<Args>` by value).
pub fn arg_of<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    segment(ty, name).and_then(first_arg)
}

/// Whether `ty`, or the type behind it if it is a reference, is a path ending in `name`.
pub fn is_named(ty: &Type, name: &str) -> bool {
    segment(behind_ref(ty), name).is_some()
}

/// The type argument of the last path segment named `name`, looking through `&`/`&mut`.
pub fn type_arg<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    segment(behind_ref(ty), name).and_then(first_arg)
}

pub fn is_mut_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_some())
}

/// The typed parameters of `f` (every one but `self`), with their positions.
pub fn typed_args(f: &ImplItemFn) -> impl Iterator<Item = (usize, &PatType)> {
    f.sig
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            FnArg::Typed(pt) => Some((i, pt)),
            FnArg::Receiver(_) => None,
        })
}
