//! Procedural macros for ringtrace.
//!
//! `#[trace]` wraps a function body in a named span whose label is the
//! function's path (`module_path!()::name`), so the span is named even in a
//! build without debug info.

use proc_macro::TokenStream;
use quote::quote;
use syn::{ItemFn, parse_macro_input};

/// Records every call of the function as a span named `module::path::function`.
///
/// ```ignore
/// #[ringtrace::trace]
/// fn handle(request: &Request) -> Response { ... }
/// ```
#[proc_macro_attribute]
pub fn trace(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = proc_macro2::TokenStream::from(attr);
        return syn::Error::new_spanned(attr, "#[trace] takes no arguments yet").to_compile_error().into();
    }
    let mut function = parse_macro_input!(item as ItemFn);
    if let Some(asyncness) = &function.sig.asyncness {
        return syn::Error::new_spanned(
            asyncness,
            "#[trace] on an async fn would time the creation of its future, not its polls; \
             put `let _span = ringtrace::span!(\"name\");` inside the code to time instead",
        )
        .to_compile_error()
        .into();
    }
    let name = function.sig.ident.to_string();
    let body = &function.block;
    function.block = syn::parse_quote!({
        let __ringtrace_span = ::ringtrace::span!(::core::concat!(::core::module_path!(), "::", #name));
        #body
    });
    quote!(#function).into()
}
