//! Where `rmcp_guard` is, seen from the crate being compiled. Each macro invocation asks
//! once and interpolates the answer (`#krate::...`) into everything it generates, as serde's
//! `dummy.rs` does with its crate path: `::rmcp_guard` by default, the crate's own name for a
//! renamed dependency (`g = { package = "rmcp-guard", ... }`, found in its Cargo.toml), or
//! the `crate = "my_crate::guard"` option for a crate that reaches guard through a
//! re-export. Nothing the author wrote is touched, so their own items may be named
//! `rmcp_guard`.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Group, Ident, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};

const NAME: &str = "rmcp_guard";

/// The path generated code reaches the runtime under: `explicit` (the `crate = "..."`
/// option) if given, else the dependency's name in the user's manifest. Inside
/// guard-runtime itself, `extern crate self as rmcp_guard` keeps the default working.
pub fn path(explicit: Option<&syn::Path>) -> TokenStream {
    match explicit {
        Some(path) => absolute(path),
        None => match crate_name("rmcp-guard") {
            Ok(FoundCrate::Name(name)) if name != NAME => {
                let ident = Ident::new(&name, Span::call_site());
                quote!(::#ident)
            }
            _ => {
                let ident = Ident::new(NAME, Span::call_site());
                quote!(::#ident)
            }
        },
    }
}

/// `my_crate::guard` as `::my_crate::guard`, so a local item of that name cannot shadow it;
/// `crate::`, `self::` and `super::` paths stay as written.
fn absolute(path: &syn::Path) -> TokenStream {
    let relative = path
        .segments
        .first()
        .is_some_and(|s| ["crate", "self", "super"].contains(&s.ident.to_string().as_str()));
    if path.leading_colon.is_some() || relative {
        path.to_token_stream()
    } else {
        quote!(::#path)
    }
}

/// `tokens`, every one at `span`: the crate path inside a `quote_spanned!`, so an error
/// about the whole expression is reported where the author wrote its subject.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(g) = &tree {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tree = TokenTree::Group(group);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

/// A local that guard's generated code both binds and reads. It is named at the macro's
/// call site whatever the surrounding tokens' spans, so a type or field passed in from a
/// `macro_rules!` caller (whose tokens carry that macro's hygiene) still sees it.
pub fn local(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// [`local`], reported at `at`: the name still resolves at the call site, but an error about
/// the expression it stands in points at the author's tokens, not at the whole attribute.
pub fn local_at(name: &str, at: Span) -> Ident {
    Ident::new(name, Span::call_site().located_at(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(written: &str) -> String {
        path(Some(&syn::parse_str(written).unwrap())).to_string()
    }

    #[test]
    fn a_re_export_path_is_reached_from_the_root() {
        assert_eq!(
            path_of("my_crate::guard"),
            quote!(::my_crate::guard).to_string()
        );
        assert_eq!(
            path_of("::my_crate::guard"),
            quote!(::my_crate::guard).to_string()
        );
    }

    #[test]
    fn a_path_inside_the_crate_stays_as_written() {
        assert_eq!(path_of("crate::guard"), quote!(crate::guard).to_string());
        assert_eq!(path_of("super::guard"), quote!(super::guard).to_string());
    }
}
