//! Parsing of `key = value` / `flag` option lists, with unknown and duplicate keys reported
//! against the list of valid ones.

use proc_macro2::TokenStream;
use syn::{
    Expr, Ident, Lit, Token,
    parse::{Parse, ParseStream, Parser},
    punctuated::Punctuated,
};

use crate::ctxt::Ctxt;

/// One option: `key = value` or a bare `key`.
pub struct Opt {
    pub key: Ident,
    pub value: Option<Expr>,
}

impl Parse for Opt {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Opt { key, value })
    }
}

/// Parses `tokens` as options of `what`, keeping only known, first occurrences.
/// `None` means the list did not parse (the error is reported).
pub fn parse_options(
    cx: &Ctxt,
    tokens: TokenStream,
    what: &str,
    valid: &[&str],
) -> Option<Vec<Opt>> {
    let parsed = match Punctuated::<Opt, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(parsed) => parsed,
        Err(error) => {
            cx.push(syn::Error::new(
                error.span(),
                format!("{error}; {what} takes: {}", valid.join(", ")),
            ));
            return None;
        }
    };
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for opt in parsed {
        let key = opt.key.to_string();
        if !valid.contains(&key.as_str()) {
            cx.error_spanned_by(
                &opt.key,
                format!(
                    "unknown {what} option `{key}`; valid options are: {}",
                    valid.join(", ")
                ),
            );
        } else if seen.contains(&key) {
            cx.error_spanned_by(
                &opt.key,
                format!("duplicate {what} option `{key}`; give each option once"),
            );
        } else {
            seen.push(key);
            out.push(opt);
        }
    }
    Some(out)
}

pub fn string_value(cx: &Ctxt, opt: &Opt) -> Option<String> {
    match &opt.value {
        Some(Expr::Lit(lit)) => match &lit.lit {
            Lit::Str(s) => Some(s.value()),
            other => {
                cx.error_spanned_by(other, format!("`{}` takes a string literal", opt.key));
                None
            }
        },
        Some(other) => {
            cx.error_spanned_by(other, format!("`{}` takes a string literal", opt.key));
            None
        }
        None => {
            cx.error_spanned_by(
                &opt.key,
                format!("`{}` needs a value: `{} = \"...\"`", opt.key, opt.key),
            );
            None
        }
    }
}

pub fn expr_value<'o>(cx: &Ctxt, opt: &'o Opt, shape: &str) -> Option<&'o Expr> {
    if opt.value.is_none() {
        cx.error_spanned_by(
            &opt.key,
            format!("`{}` needs a value: `{} = {shape}`", opt.key, opt.key),
        );
    }
    opt.value.as_ref()
}

/// A bare flag, or `flag = true|false`.
pub fn flag_value(cx: &Ctxt, opt: &Opt) -> bool {
    match &opt.value {
        None => true,
        Some(Expr::Lit(syn::ExprLit {
            lit: Lit::Bool(b), ..
        })) => b.value,
        Some(other) => {
            cx.error_spanned_by(
                other,
                format!(
                    "`{}` is a flag: write `{}` or `{} = false`",
                    opt.key, opt.key, opt.key
                ),
            );
            false
        }
    }
}

/// `"90s"`, `"5m"`, `"1h"` as seconds; `None` if it does not read as one.
pub fn parse_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = digits.parse().ok().filter(|n| *n > 0)?;
    match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => None,
    }
}
