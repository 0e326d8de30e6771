//! Procedural macros for ringtrace: `#[trace]`.
//!
//! `#[trace]` wraps a function body in a span. It works on free functions,
//! generic functions, methods, and whole `impl` blocks (every method with a
//! body, named `module::Type::method`). Options:
//!
//! - `#[trace]`: the key is a site descriptor labelled `module::path::name`,
//!   so the name survives builds without debug info.
//! - `#[trace(addr)]`: the key is the code address; no name string lands in
//!   the binary and `rtconv` names the span from DWARF.
//! - `#[trace(arg = n)]`: also records the integer argument `n` (any
//!   primitive integer, cast to 64 bits) with the span.
//!
//! `async fn` is rejected at compile time: the body of an async fn runs in
//! `poll`, possibly on several threads and interleaved with other tasks, so a
//! span around it would time the creation of the future, not its work.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{ToTokens, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Block, Ident, ImplItem, ItemFn, ItemImpl, Signature, Token, Type, parse_macro_input, parse_quote};

/// Records every call of the function (or of every method of an `impl`
/// block) as a span. See the crate docs for the options.
///
/// ```ignore
/// #[ringtrace::trace]
/// fn handle(request: &Request) -> Response { ... }
///
/// #[ringtrace::trace(addr, arg = len)]
/// fn fill(buf: &mut [u8], len: usize) { ... }
///
/// #[ringtrace::trace]
/// impl<T: Clone> Cache<T> { fn get(&self, k: u64) -> Option<T> { ... } }
/// ```
#[proc_macro_attribute]
pub fn trace(attr: TokenStream, item: TokenStream) -> TokenStream {
    let options = parse_macro_input!(attr as Options);
    let result = if let Ok(mut function) = syn::parse::<ItemFn>(item.clone()) {
        instrument(&mut function.sig, &mut function.block, None, &options).map(|()| function.into_token_stream())
    } else if let Ok(mut block) = syn::parse::<ItemImpl>(item.clone()) {
        let type_name = type_name(&block.self_ty);
        block
            .items
            .iter_mut()
            .try_for_each(|item| match item {
                ImplItem::Fn(method) => instrument(&mut method.sig, &mut method.block, type_name.as_deref(), &options),
                _ => Ok(()),
            })
            .map(|()| block.into_token_stream())
    } else {
        Err(syn::Error::new(Span::call_site(), "#[trace] goes on a function, a method or an impl block"))
    };
    result.unwrap_or_else(syn::Error::into_compile_error).into()
}

/// `#[trace(addr, arg = n)]`.
#[derive(Default)]
struct Options {
    addr: bool,
    arg: Option<Ident>,
}

impl Parse for Options {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut options = Options::default();
        for option in Punctuated::<syn::Meta, Token![,]>::parse_terminated(input)? {
            match &option {
                syn::Meta::Path(p) if p.is_ident("addr") => options.addr = true,
                syn::Meta::NameValue(nv) if nv.path.is_ident("arg") => match &nv.value {
                    syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                        options.arg = p.path.get_ident().cloned();
                    }
                    other => {
                        return Err(syn::Error::new_spanned(other, "arg = takes the name of an integer parameter"));
                    }
                },
                other => {
                    return Err(syn::Error::new_spanned(other, "#[trace] options are `addr` and `arg = parameter`"));
                }
            }
        }
        Ok(options)
    }
}

/// `Cache<T>` → `Cache`: the name without generics, for the label.
fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn instrument(sig: &mut Signature, body: &mut Block, type_name: Option<&str>, options: &Options) -> syn::Result<()> {
    if let Some(asyncness) = &sig.asyncness {
        return Err(syn::Error::new_spanned(
            asyncness,
            "#[trace] on an async fn would time the creation of its future, not its polls; \
             put `let _span = ringtrace::span!(\"name\");` in the synchronous parts you want timed",
        ));
    }
    let name = match type_name {
        Some(t) => format!("{t}::{}", sig.ident),
        None => sig.ident.to_string(),
    };
    let key = if options.addr {
        quote!(::ringtrace::code_address!())
    } else {
        quote!(::ringtrace::site!(::core::concat!(::core::module_path!(), "::", #name)))
    };
    let guard = match &options.arg {
        Some(arg) => {
            let is_param = |input: &syn::FnArg| match input {
                syn::FnArg::Typed(t) => matches!(&*t.pat, syn::Pat::Ident(p) if p.ident == *arg),
                syn::FnArg::Receiver(_) => false,
            };
            if !sig.inputs.iter().any(is_param) {
                return Err(syn::Error::new_spanned(arg, format!("`{arg}` is not a parameter of `{}`", sig.ident)));
            }
            quote!(::ringtrace::ArgSpan::<::ringtrace::clock::DefaultClock>::enter(#key, #arg as u64))
        }
        None => quote!(::ringtrace::Span::<::ringtrace::clock::DefaultClock>::enter(#key)),
    };
    let inner = &*body;
    *body = parse_quote!({
        let __ringtrace_span = ::ringtrace::__traced!(#guard);
        #inner
    });
    Ok(())
}
