//! `#[refused]`: the attribute that generates, for one store port trait, the impl by which
//! capsid-core's test-only `RecordingStore` refuses every method of that trait.
//!
//! capsid-core puts `#[cfg_attr(test, capsid_refusing::refused)]` above each store port, first
//! among its attributes (before `#[async_trait]`, so the methods are still `async fn` when this
//! attribute reads them, and before `mockall::automock`, which rejects it); this crate is a
//! dev-dependency, so outside capsid-core's own tests the attribute does not exist and the
//! trait is exactly as written. Under test the trait is emitted unchanged, followed by
//!
//! ```text
//! #[async_trait::async_trait]
//! impl Port for crate::service::recording_store::RecordingStore {
//!     async fn method(&self, _: A, _: B) -> R { self.refuse("method") }
//!     ...
//! }
//! ```
//!
//! for every method without a default body (a default answers for itself). `refuse` records the
//! method's name and answers `R`'s refusal, so a method added to a port needs no edit here or
//! in the recording store.

use proc_macro::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::Nothing;
use syn::spanned::Spanned;
use syn::{FnArg, ItemTrait, Pat, PatWild, TraitItem, parse_macro_input, parse_quote};

/// Re-emits the port trait and, after it, the recording store's refusing impl of it.
#[proc_macro_attribute]
pub fn refused(args: TokenStream, item: TokenStream) -> TokenStream {
    parse_macro_input!(args as Nothing);
    let port = parse_macro_input!(item as ItemTrait);
    match refusals(&port) {
        Ok(methods) => {
            let name = &port.ident;
            quote! {
                #port

                #[async_trait::async_trait]
                impl #name for crate::service::recording_store::RecordingStore {
                    #(#methods)*
                }
            }
            .into()
        }
        Err(error) => {
            let error = error.to_compile_error();
            quote!(#port #error).into()
        }
    }
}

/// One refusing method per required method of `port`: its signature with every argument
/// ignored, and a body that records the name and refuses.
fn refusals(port: &ItemTrait) -> syn::Result<Vec<syn::ImplItemFn>> {
    if !port.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &port.generics,
            "`#[refused]` ports take no generic parameters",
        ));
    }
    let mut methods = Vec::new();
    for item in &port.items {
        let TraitItem::Fn(method) = item else {
            return Err(syn::Error::new_spanned(
                item,
                "`#[refused]` ports hold methods only: the recording store cannot choose a type or a constant",
            ));
        };
        if method.default.is_some() {
            continue;
        }
        let mut sig = method.sig.clone();
        for input in &mut sig.inputs {
            if let FnArg::Typed(arg) = input {
                *arg.pat = Pat::Wild(PatWild {
                    attrs: Vec::new(),
                    underscore_token: Default::default(),
                });
            }
        }
        let cfgs = method.attrs.iter().filter(|a| a.path().is_ident("cfg"));
        let name = sig.ident.to_string();
        // Spanned at the return type: a type with no refusal chosen is reported there.
        let refusal = quote_spanned!(sig.output.span()=> self.refuse(#name));
        methods.push(parse_quote! {
            #(#cfgs)*
            #sig {
                #refusal
            }
        });
    }
    Ok(methods)
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;
    use syn::{ItemTrait, parse_quote};

    use super::refusals;

    fn generated(port: ItemTrait) -> Vec<String> {
        let methods = refusals(&port).expect("a port of methods");
        methods
            .iter()
            .map(|m| m.to_token_stream().to_string())
            .collect()
    }

    #[test]
    fn every_required_method_refuses_by_name_and_ignores_its_arguments() {
        let methods = generated(parse_quote! {
            /// Docs stay on the trait.
            pub trait Port: Send + Sync {
                /// One.
                async fn one(&self, key: &str, request: Request<'_>) -> StoreResult<u64>;
                /// A sync method.
                fn two(&self) -> Option<String>;
                /// A default answers for itself.
                async fn three(&self) -> Option<String> {
                    None
                }
            }
        });
        assert_eq!(
            methods,
            [
                "async fn one (& self , _ : & str , _ : Request < '_ >) -> StoreResult < u64 > { self . refuse (\"one\") }",
                "fn two (& self) -> Option < String > { self . refuse (\"two\") }",
            ]
        );
    }

    #[test]
    fn a_port_with_an_associated_type_or_generics_is_refused_at_compile_time() {
        let typed: ItemTrait = parse_quote! {
            pub trait Port { type Row; fn one(&self) -> Self::Row; }
        };
        assert!(refusals(&typed).is_err());
        let generic: ItemTrait = parse_quote! {
            pub trait Port<T> { fn one(&self) -> T; }
        };
        assert!(refusals(&generic).is_err());
    }
}
