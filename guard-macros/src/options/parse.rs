//! Reading an option list against its attribute's declaration: unknown and duplicate keys,
//! and the rules between the options written.

use proc_macro2::TokenStream;
use syn::{
    Expr, ExprLit, Lit, Token,
    parse::{ParseStream, Parser},
    punctuated::Punctuated,
};

use super::Attribute;
use crate::{attr::Opt, ctxt::Ctxt};

/// Parses `tokens` as options of `attr`, keeping only known, first occurrences.
/// `None` means the list did not parse (the error is reported).
pub fn parse(cx: &Ctxt, tokens: TokenStream, attr: &Attribute) -> Option<Vec<Opt>> {
    let what = attr.name;
    let list = |input: ParseStream| Punctuated::<Opt, Token![,]>::parse_terminated(input);
    let parsed = match list.parse2(tokens) {
        Ok(parsed) => parsed,
        Err(error) => {
            cx.push(syn::Error::new(
                error.span(),
                format!("{error}; {what} takes: {}", attr.names()),
            ));
            return None;
        }
    };
    let mut out: Vec<Opt> = Vec::new();
    for opt in parsed {
        let key = opt.key.to_string();
        if attr.get(&key).is_none() {
            cx.error_spanned_by(
                &opt.key,
                format!(
                    "unknown {what} option `{key}`; valid options are: {}",
                    attr.names()
                ),
            );
        } else if out.iter().any(|o| o.key == key) {
            cx.error_spanned_by(
                &opt.key,
                format!("duplicate {what} option `{key}`; give each option once"),
            );
        } else {
            out.push(opt);
        }
    }
    Some(out)
}

/// Reports, at the option that has the rule, every option `written` needs and lacks and
/// every pair it cannot go with, in the declaration's order. A flag written `= false` is
/// not there.
pub fn check_rules(cx: &Ctxt, attr: &Attribute, written: &[Opt]) {
    let off = |o: &Opt| matches!(&o.value, Some(Expr::Lit(ExprLit { lit: Lit::Bool(b), .. })) if !b.value);
    let find = |name: &str| written.iter().find(|o| o.key == name && !off(o));
    for declared in attr.options {
        let Some(opt) = find(declared.name) else {
            continue;
        };
        let at = opt
            .value
            .as_ref()
            .map_or(&opt.key as &dyn quote::ToTokens, |v| {
                v as &dyn quote::ToTokens
            });
        for rule in declared.needs {
            if find(rule.option).is_none() {
                cx.error_spanned_by(at, rule.message);
            }
        }
        for rule in declared.conflicts {
            if find(rule.option).is_some() {
                cx.error_spanned_by(at, rule.message);
            }
        }
    }
}
