//! Expansion snapshots: each guard macro run over a set of the UI pass cases, the output
//! formatted with prettyplease and compared with `tests/expand/<case>.expanded.rs`, so a
//! change in generated code shows in review. `GUARD_BLESS=1` rewrites the snapshots.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, ImplItem, Item};

use crate::tool_attr::is_attr;

/// The UI pass cases (under the workspace's `tests/ui`) whose expansion is kept.
const CASES: &[&str] = &[
    "destructive/pass/checkbox.rs",
    "destructive/pass/type_to_confirm_custom_form.rs",
    "destructive/pass/no_parameters.rs",
    "ask/pass/ask.rs",
    "batch/pass/pick_items.rs",
    "defer/pass/defer.rs",
    "grant/pass/grant.rs",
    "disclose/pass/granted_and_paged.rs",
    "form/pass/all_kinds.rs",
    "form/pass/choices.rs",
    "idempotency_key/pass/keyed.rs",
    "operations/pass/one_op.rs",
    "read_only/pass/read_only.rs",
];

/// Takes the first attribute named `name` off `attrs`, returning its arguments.
fn take(attrs: &mut Vec<Attribute>, name: &str) -> Option<TokenStream> {
    let at = attrs.iter().position(|a| is_attr(a, name))?;
    let attr = attrs.remove(at);
    Some(match attr.meta {
        syn::Meta::List(list) => list.tokens,
        _ => TokenStream::new(),
    })
}

/// Whether `attrs` derive `name`.
fn derives(attrs: &[Attribute], name: &str) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|paths| paths.iter().any(|p| p.is_ident(name)))
        })
}

fn items(tokens: TokenStream) -> Vec<Item> {
    syn::parse2::<syn::File>(tokens)
        .expect("an expansion parses as items")
        .items
}

/// Every guard macro in `items` expanded, outermost first, until none is left.
fn expand_items(input: Vec<Item>) -> Vec<Item> {
    let mut out = Vec::new();
    for item in input {
        match item {
            Item::Impl(mut imp) => {
                if let Some(attr) = take(&mut imp.attrs, "operations") {
                    out.extend(expand_items(items(crate::operations::expand(attr, imp))));
                    continue;
                }
                let mut methods = Vec::new();
                for member in std::mem::take(&mut imp.items) {
                    methods.extend(expand_member(member));
                }
                imp.items = methods;
                out.push(Item::Impl(imp));
            }
            Item::Struct(_) | Item::Enum(_) => {
                let tokens = item.to_token_stream();
                let attrs = match &item {
                    Item::Struct(s) => &s.attrs,
                    Item::Enum(e) => &e.attrs,
                    _ => unreachable!(),
                };
                let mut derived = Vec::new();
                for (name, derive) in [
                    (
                        "Form",
                        crate::form::derive as fn(syn::DeriveInput) -> TokenStream,
                    ),
                    ("FormEnum", crate::form_enum::derive),
                    ("ToolArgs", crate::tool_args::derive),
                ] {
                    if derives(attrs, name) {
                        derived.extend(items(derive(syn::parse2(tokens.clone()).unwrap())));
                    }
                }
                out.push(item);
                out.extend(derived);
            }
            Item::Macro(m) if m.mac.path.is_ident("macro_rules") => out.push(Item::Macro(m)),
            other => out.push(other),
        }
    }
    out
}

/// A method with its guard attribute expanded (and the methods that expansion made).
fn expand_member(member: ImplItem) -> Vec<ImplItem> {
    let ImplItem::Fn(mut f) = member else {
        return vec![member];
    };
    let expanded = if let Some(attr) = take(&mut f.attrs, "destructive") {
        crate::destructive::expand(attr, f)
    } else if let Some(attr) = take(&mut f.attrs, "ask") {
        crate::ask::expand(attr, f)
    } else if let Some(attr) = take(&mut f.attrs, "read_only") {
        crate::read_only::expand(attr, f)
    } else if let Some(attr) = take(&mut f.attrs, "idempotent") {
        crate::read_only::expand_idempotent(attr, f)
    } else {
        return vec![ImplItem::Fn(f)];
    };
    let wrapped: syn::ItemImpl =
        syn::parse2(quote!(impl __Snapshot { #expanded })).expect("an expansion parses as methods");
    wrapped.items.into_iter().flat_map(expand_member).collect()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn expansions_match_their_snapshots() {
    let bless = std::env::var_os("GUARD_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for case in CASES {
        let source = std::fs::read_to_string(workspace().join("tests/ui").join(case))
            .unwrap_or_else(|e| panic!("read tests/ui/{case}: {e}"));
        let file: syn::File = syn::parse_str(&source).expect("a UI case parses");
        let expanded = syn::File {
            items: expand_items(file.items),
            ..file
        };
        let text = prettyplease::unparse(&expanded);
        let name = case
            .trim_end_matches(".rs")
            .replace("/pass/", "_")
            .replace('/', "_");
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/expand")
            .join(format!("{name}.expanded.rs"));
        if bless {
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "the generated code changed for {stale:?}; review the difference and run `GUARD_BLESS=1 cargo test -p rmcp-guard-macros --lib snapshots` to accept it"
    );
}
