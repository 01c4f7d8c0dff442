//! What `#[derive(Form)]` expands to: the `Form` impl whose static description gives the
//! requested schema and the server-side validator, or, after an error, a stand-in impl.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{DeriveInput, Ident, Lit, ext::IdentExt, spanned::Spanned};

use super::{Field, Kind};
use crate::krate;

/// On error: still implement the traits, so uses of the form do not each report that it
/// is not a form. The build fails on the reported errors; this code never runs.
pub(super) fn fallback(input: &DeriveInput, rt: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let name = ident.to_string();
    let (impl_generics, ty_generics, _) = input.generics.split_for_impl();
    let bound = quote!(where Self: ::core::marker::Send + 'static);
    quote! {
        impl #impl_generics #rt::__private::CheckboxForm for #ident #ty_generics #bound {}
        impl #impl_generics #rt::__private::TypeToConfirmForm for #ident #ty_generics #bound {}
        impl #impl_generics #rt::__private::FormDerived for #ident #ty_generics #bound {}
        impl #impl_generics #rt::Form for #ident #ty_generics #bound {
            const SPEC: &'static #rt::form::FormSpec = &#rt::form::FormSpec { name: #name, fields: &[], fallback: true };

            fn from_valid(
                _: &#rt::__private::serde_json::Map<::std::string::String, #rt::__private::serde_json::Value>,
            ) -> ::core::result::Result<Self, ::std::string::String> {
                ::core::unreachable!("guard reported a compile error for this form")
            }

            fn to_content(&self) -> #rt::__private::serde_json::Map<::std::string::String, #rt::__private::serde_json::Value> {
                ::core::unreachable!("guard reported a compile error for this form")
            }
        }
    }
}

pub(super) fn expand(ident: &Ident, fields: &[Field], rt: &TokenStream) -> TokenStream {
    let name = ident.to_string();
    let (content, fields_at) = (krate::local("content"), krate::local("fields"));
    let specs = fields.iter().map(|f| field_spec(f, rt));
    let extracts = fields.iter().enumerate().map(|(i, f)| {
        let field = &f.ident;
        let key = field.unraw().to_string();
        let ty = &f.ty;
        let at_ty = krate::respan(rt.clone(), ty.span());
        let read = match f.kind {
            Kind::Enum => quote_spanned!(ty.span()=> <#ty as #at_ty::form::Choice>::from_choice),
            _ => quote_spanned!(ty.span()=> <#ty as #at_ty::form::FieldValue>::from_field),
        };
        quote_spanned! {ty.span()=>
            #field: #read(#content.get(#key), &#fields_at[#i])?
        }
    });
    let to_json = fields.iter().map(|f| {
        let field = &f.ident;
        let key = field.unraw().to_string();
        let ty = &f.ty;
        let write = match f.kind {
            Kind::Enum => {
                let at_ty = krate::respan(rt.clone(), ty.span());
                quote_spanned!(ty.span()=> <#ty as #at_ty::form::Choice>::choice_json)
            }
            _ => quote!(<#ty as #rt::form::FieldValue>::to_json),
        };
        quote! {
            content.insert(<::std::string::String as ::core::convert::From<&str>>::from(#key), #write(&self.#field));
        }
    });
    let defaults = fields.iter().filter_map(|f| default_is_a_choice(f, rt));
    // The confirmation roles the form can play, by the fields counted here; the static
    // description is checked again where a tool asks with it.
    let checkbox = fields
        .iter()
        .any(|f| f.checkbox)
        .then(|| quote!(impl #rt::__private::CheckboxForm for #ident {}));
    let confirm_text = fields
        .iter()
        .any(|f| f.confirm_text)
        .then(|| quote!(impl #rt::__private::TypeToConfirmForm for #ident {}));
    quote! {
        #(#defaults)*
        #checkbox
        #confirm_text
        impl #rt::__private::FormDerived for #ident {}
        impl #rt::Form for #ident {
            const SPEC: &'static #rt::form::FormSpec = &#rt::form::FormSpec {
                name: #name,
                fields: &[#(#specs),*],
                fallback: false,
            };

            fn from_valid(
                #content: &#rt::__private::serde_json::Map<::std::string::String, #rt::__private::serde_json::Value>,
            ) -> ::core::result::Result<Self, ::std::string::String> {
                let #fields_at = <Self as #rt::Form>::SPEC.fields;
                ::core::result::Result::Ok(Self { #(#extracts),* })
            }

            fn to_content(&self) -> #rt::__private::serde_json::Map<::std::string::String, #rt::__private::serde_json::Value> {
                let mut content = #rt::__private::serde_json::Map::new();
                #(#to_json)*
                content
            }

            fn requested_schema() -> #rt::__private::rmcp::model::ElicitationSchema {
                // This form's own: a form is never generic, so one `static` is one type's.
                static SCHEMA: ::std::sync::OnceLock<#rt::__private::rmcp::model::ElicitationSchema> =
                    ::std::sync::OnceLock::new();
                ::core::clone::Clone::clone(
                    SCHEMA.get_or_init(|| <Self as #rt::Form>::SPEC.requested_schema()),
                )
            }
        }
    }
}

/// A `const` item that fails the build when a choice's `default` is not one of the values
/// its enum offers: the enum is another derive's, so only the compiler sees both.
fn default_is_a_choice(f: &Field, rt: &TokenStream) -> Option<TokenStream> {
    let (Kind::Enum, Some(Lit::Str(value))) = (&f.kind, &f.default) else {
        return None;
    };
    let ty = &f.ty;
    let message = format!(
        "`default = {value:?}` is not one of the choices of form field `{}`, so the human would be shown a default they cannot pick. Write the wire value of one of its variants: the variant's name in snake_case, or its `#[form(value = \"...\")]`",
        f.ident.unraw(),
        value = value.value()
    );
    let at = krate::respan(rt.clone(), value.span());
    Some(quote_spanned! {value.span()=>
        const _: () = if !#at::__private::offers(<#ty as #at::form::Choice>::VALUES, #value) {
            ::core::panic!(#message)
        };
    })
}

fn opt_str(value: &Option<String>) -> TokenStream {
    match value {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

fn opt_num<T: quote::ToTokens>(value: Option<T>) -> TokenStream {
    match value {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    }
}

fn field_spec(f: &Field, rt: &TokenStream) -> TokenStream {
    let name = f.ident.unraw().to_string();
    let title = opt_str(&f.title);
    let description = opt_str(&f.description);
    let optional = f.optional;
    let kind = match &f.kind {
        Kind::String => {
            let min = opt_num(f.min_length);
            let max = opt_num(f.max_length);
            let format = match f.format {
                Some("email") => {
                    quote!(::core::option::Option::Some(
                        #rt::form::Format::Email
                    ))
                }
                Some("uri") => quote!(::core::option::Option::Some(
                    #rt::form::Format::Uri
                )),
                Some("date") => quote!(::core::option::Option::Some(
                    #rt::form::Format::Date
                )),
                Some(_) => quote!(::core::option::Option::Some(
                    #rt::form::Format::DateTime
                )),
                None => quote!(::core::option::Option::None),
            };
            quote!(#rt::form::FieldKind::String { min_length: #min, max_length: #max, format: #format })
        }
        Kind::Bool => quote!(#rt::form::FieldKind::Boolean),
        Kind::Integer(rust_type) => {
            let ty = Ident::new(rust_type, Span::call_site());
            let min = opt_num(f.minimum.map(|n| n as i64));
            let max = opt_num(f.maximum.map(|n| n as i64));
            quote!(#rt::form::FieldKind::Integer {
                minimum: #min,
                maximum: #max,
                type_min: #ty::MIN as i128,
                type_max: #ty::MAX as i128,
                rust_type: #rust_type,
            })
        }
        Kind::Number => {
            let min = opt_num(f.minimum);
            let max = opt_num(f.maximum);
            quote!(#rt::form::FieldKind::Number { minimum: #min, maximum: #max })
        }
        // Spanned and bounded like the field's extraction, so a non-flat type is one error.
        Kind::Multi => {
            let ty = &f.ty;
            let at_ty = krate::respan(rt.clone(), ty.span());
            quote_spanned! {ty.span()=>
                #at_ty::form::FieldKind::MultiEnum { values: <#ty as #at_ty::form::FieldValue>::CHOICES }
            }
        }
        // A single choice is a `Choice`, which no other field type is: an alias of a list,
        // a text or a number cannot be published as one.
        Kind::Enum => {
            let ty = &f.ty;
            let at_ty = krate::respan(rt.clone(), ty.span());
            let variant = if f.enum_names {
                quote!(LegacyEnum)
            } else {
                quote!(Enum)
            };
            quote_spanned! {ty.span()=>
                #at_ty::form::FieldKind::#variant { values: <#ty as #at_ty::form::Choice>::VALUES }
            }
        }
    };
    let default = match &f.default {
        None => quote!(::core::option::Option::None),
        Some(Lit::Str(s)) => {
            quote!(::core::option::Option::Some(#rt::form::DefaultValue::Str(#s)))
        }
        Some(Lit::Bool(b)) => {
            quote!(::core::option::Option::Some(#rt::form::DefaultValue::Bool(#b)))
        }
        Some(Lit::Int(i)) if matches!(f.kind, Kind::Number) => {
            let n: f64 = i.base10_parse().unwrap_or_default();
            quote!(::core::option::Option::Some(#rt::form::DefaultValue::Num(#n)))
        }
        Some(Lit::Int(i)) => {
            let n: i64 = i.base10_parse().unwrap_or_default();
            quote!(::core::option::Option::Some(#rt::form::DefaultValue::Int(#n)))
        }
        Some(Lit::Float(x)) => {
            let n: f64 = x.base10_parse().unwrap_or_default();
            quote!(::core::option::Option::Some(#rt::form::DefaultValue::Num(#n)))
        }
        Some(_) => quote!(::core::option::Option::None),
    };
    let role = if f.checkbox {
        quote!(#rt::form::FieldRole::Checkbox)
    } else if f.confirm_text {
        quote!(#rt::form::FieldRole::ConfirmText)
    } else {
        quote!(#rt::form::FieldRole::Plain)
    };
    // Free text (a string that is not the retyped target and has no format) can hold
    // anything the human wrote, so the audit record keeps it only when asked to.
    let free_text = matches!(f.kind, Kind::String) && !f.confirm_text && f.format.is_none();
    let redact = f.redact.unwrap_or(free_text);
    quote! {
        #rt::form::FieldSpec {
            name: #name,
            title: #title,
            description: #description,
            kind: #kind,
            optional: #optional,
            default: #default,
            role: #role,
            redact: #redact,
        }
    }
}
