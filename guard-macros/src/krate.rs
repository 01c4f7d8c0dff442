//! Where `rmcp_guard` is, seen from the crate being compiled. Expansions are written
//! against `::rmcp_guard`; a crate that renamed the dependency
//! (`g = { package = "rmcp-guard", ... }`, found in its Cargo.toml) or that reaches guard
//! through a re-export (`crate = "my_crate::guard"`, as serde's `crate` option) gets those
//! paths rewritten on the way out.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Group, Ident, Punct, Spacing, TokenStream, TokenTree};

const NAME: &str = "rmcp_guard";

/// `tokens` with every `::rmcp_guard` pointing where the runtime really is.
pub fn finish(tokens: TokenStream, explicit: Option<&syn::Path>) -> TokenStream {
    match explicit.cloned().or_else(renamed) {
        Some(path) => rewrite(tokens, &path),
        None => tokens,
    }
}

/// The dependency's own name in the user's manifest, when it is not `rmcp_guard`. Inside
/// guard-runtime itself `extern crate self as rmcp_guard` keeps the default working.
fn renamed() -> Option<syn::Path> {
    match crate_name("rmcp-guard") {
        Ok(FoundCrate::Name(name)) if name != NAME => {
            let ident = Ident::new(&name, proc_macro2::Span::call_site());
            Some(syn::parse_quote!(::#ident))
        }
        _ => None,
    }
}

fn rewrite(tokens: TokenStream, to: &syn::Path) -> TokenStream {
    let relative = to.leading_colon.is_none()
        && to
            .segments
            .first()
            .is_some_and(|s| ["crate", "self", "super"].contains(&s.ident.to_string().as_str()));
    let mut out: Vec<TokenTree> = Vec::new();
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) if ident == NAME => {
                let after_colons = matches!(
                    out.as_slice(),
                    [.., TokenTree::Punct(a), TokenTree::Punct(b)]
                        if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
                );
                if after_colons && relative {
                    // `crate::...` cannot follow `::`.
                    out.truncate(out.len() - 2);
                } else if !after_colons && to.leading_colon.is_some() {
                    push_colons(&mut out, ident.span());
                }
                for (i, segment) in to.segments.iter().enumerate() {
                    if i > 0 {
                        push_colons(&mut out, ident.span());
                    }
                    let mut name = segment.ident.clone();
                    name.set_span(ident.span());
                    out.push(TokenTree::Ident(name));
                }
            }
            TokenTree::Group(group) => {
                let mut inner = Group::new(group.delimiter(), rewrite(group.stream(), to));
                inner.set_span(group.span());
                out.push(TokenTree::Group(inner));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

fn push_colons(out: &mut Vec<TokenTree>, span: proc_macro2::Span) {
    let mut first = Punct::new(':', Spacing::Joint);
    first.set_span(span);
    let mut second = Punct::new(':', Spacing::Alone);
    second.set_span(span);
    out.push(TokenTree::Punct(first));
    out.push(TokenTree::Punct(second));
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn rewritten(to: &str) -> String {
        let path: syn::Path = syn::parse_str(to).unwrap();
        let tokens = quote!(::rmcp_guard::Form; impl ::rmcp_guard::__private::X for T { fn f() { rmcp_guard::y() } });
        rewrite(tokens, &path).to_string()
    }

    #[test]
    fn a_renamed_crate_replaces_the_name() {
        assert_eq!(
            rewritten("::g"),
            quote!(::g::Form; impl ::g::__private::X for T { fn f() { ::g::y() } }).to_string()
        );
    }

    #[test]
    fn a_re_export_path_replaces_the_name() {
        assert_eq!(
            rewritten("my_crate::guard"),
            quote!(::my_crate::guard::Form; impl ::my_crate::guard::__private::X for T { fn f() { my_crate::guard::y() } }).to_string()
        );
        assert_eq!(
            rewritten("crate::guard"),
            quote!(crate::guard::Form; impl crate::guard::__private::X for T { fn f() { crate::guard::y() } }).to_string()
        );
    }
}
