//! `#[derive(FormEnum)]`: a unit-only enum offered to the human as a single choice.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields};

use crate::{attr, ctxt::Ctxt, options};

struct Variant {
    ident: syn::Ident,
    value: String,
    title: Option<String>,
}

pub fn derive(input: DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let variants = parse(&cx, &input);
    let rt = crate::krate::path(None);
    cx.finish(
        || expand(&input.ident, &variants, &rt),
        || fallback(&input, &rt),
    )
}

/// On error: still implement the trait (for a non-generic enum), so forms using it do not
/// each report a non-flat field. The build fails on the errors; this never runs.
fn fallback(input: &DeriveInput, rt: &TokenStream) -> TokenStream {
    if !input.generics.params.is_empty() || !matches!(input.data, Data::Enum(_)) {
        return TokenStream::new();
    }
    let ident = &input.ident;
    quote! {
        impl #rt::__private::FormEnumDerived for #ident {}
        impl #rt::FormEnum for #ident {
            const VALUES: &'static [#rt::form::EnumValue] = &[];
            fn from_wire(_: &str) -> ::core::option::Option<Self> {
                ::core::unreachable!("guard reported a compile error for this enum")
            }
            fn as_wire(&self) -> &'static str {
                ::core::unreachable!("guard reported a compile error for this enum")
            }
        }
    }
}

fn parse(cx: &Ctxt, input: &DeriveInput) -> Vec<Variant> {
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "a form choice cannot be generic: its values must be known at compile time",
        );
    }
    let Data::Enum(data) = &input.data else {
        cx.error_spanned_by(&input.ident, "`FormEnum` derives only on a unit-only enum; a struct inside a form is not flat, so flatten its fields into the form");
        return Vec::new();
    };
    if data.variants.is_empty() {
        cx.error_spanned_by(&input.ident, "a form choice needs at least one variant");
    }
    let mut out: Vec<Variant> = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            cx.error_spanned_by(
                &v.fields,
                format!(
                    "variant `{}` carries data: a form choice must be a unit variant so every client can render it as one option; move the data into separate form fields",
                    v.ident
                ),
            );
        }
        let mut variant = Variant {
            ident: v.ident.clone(),
            value: snake_case(&v.ident.to_string()),
            title: None,
        };
        for a in v.attrs.iter().filter(|a| a.path().is_ident("form")) {
            let tokens = match a.meta.require_list() {
                Ok(list) => list.tokens.clone(),
                Err(e) => {
                    cx.push(e);
                    continue;
                }
            };
            for opt in options::parse(cx, tokens, &options::FORM_VARIANT)
                .into_iter()
                .flatten()
            {
                let text = attr::string_value(cx, &opt);
                match (opt.key.to_string().as_str(), text) {
                    ("value", Some(t)) => variant.value = t,
                    ("title", Some(t)) => variant.title = Some(t),
                    _ => {}
                }
            }
        }
        if out.iter().any(|o| o.value == variant.value) {
            cx.error_spanned_by(
                &v.ident,
                format!(
                    "two variants have the wire value `{}`; give one `#[form(value = \"...\")]`",
                    variant.value
                ),
            );
        }
        out.push(variant);
    }
    out
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn expand(ident: &syn::Ident, variants: &[Variant], rt: &TokenStream) -> TokenStream {
    let values = variants.iter().map(|v| {
        let value = &v.value;
        let title = match &v.title {
            Some(t) => quote!(::core::option::Option::Some(#t)),
            None => quote!(::core::option::Option::None),
        };
        quote!(#rt::form::EnumValue { value: #value, title: #title })
    });
    let from = variants.iter().map(|v| {
        let (value, var) = (&v.value, &v.ident);
        quote!(#value => ::core::option::Option::Some(Self::#var))
    });
    let to = variants.iter().map(|v| {
        let (value, var) = (&v.value, &v.ident);
        quote!(Self::#var => #value)
    });
    quote! {
        impl #rt::__private::FormEnumDerived for #ident {}
        impl #rt::FormEnum for #ident {
            const VALUES: &'static [#rt::form::EnumValue] = &[#(#values),*];

            fn from_wire(value: &str) -> ::core::option::Option<Self> {
                match value {
                    #(#from,)*
                    _ => ::core::option::Option::None,
                }
            }

            fn as_wire(&self) -> &'static str {
                match self {
                    #(#to,)*
                }
            }
        }
    }
}
