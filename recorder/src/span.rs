//! The span guard and the `span!` macros.

use crate::clock;

/// A running span: reads the counter when created and writes one record
/// into the calling thread's ring when dropped.
#[must_use = "a span ends when this guard is dropped; bind it: `let _span = span!();`"]
#[derive(Debug)]
pub struct Span {
    key: u64,
    enter: u64,
}

impl Span {
    /// Starts a span with `key` (a code address or a site descriptor's address).
    #[inline(always)]
    pub fn enter(key: u64) -> Span {
        Span { key, enter: clock::now() }
    }
}

impl Drop for Span {
    #[inline(always)]
    fn drop(&mut self) {
        let exit = clock::now();
        crate::sink::record(self.key, self.enter, exit);
    }
}

/// Storage for one site descriptor: its bytes, 8-byte aligned.
#[repr(C, align(8))]
#[derive(Debug)]
pub struct SiteDescriptor<const N: usize>(pub [u8; N]);

/// Starts a span that ends at the end of the enclosing scope.
///
/// - `span!()`: the key is the code address of the call site; `rtconv` names
///   it from the binary's DWARF (function, file and line). No string lands in
///   the binary.
/// - `span!("label")`: the key is a per-call-site static descriptor holding
///   the label, file and line, placed in the `ringtrace_sites` linker section
///   and copied into every dump, so it is named even with no binary at hand.
///
/// ```
/// fn parse(input: &str) -> usize {
///     let _span = ringtrace::span!();
///     let _inner = ringtrace::span!("count words");
///     input.split_whitespace().count()
/// }
/// assert_eq!(parse("a b c"), 3);
/// ```
#[macro_export]
macro_rules! span {
    () => {
        $crate::Span::enter($crate::code_address!())
    };
    ($label:expr) => {
        $crate::Span::enter($crate::site!($label))
    };
}

/// The address of this point in the code, as a span key.
#[doc(hidden)]
#[macro_export]
#[cfg(target_arch = "x86_64")]
macro_rules! code_address {
    () => {{
        let pc: u64;
        // SAFETY: `lea` of a local label reads no memory and touches no flags.
        unsafe {
            ::core::arch::asm!("2: lea {0}, [rip + 2b]", out(reg) pc, options(nomem, nostack, preserves_flags))
        };
        pc
    }};
}

/// The address of this point in the code, as a span key.
#[doc(hidden)]
#[macro_export]
#[cfg(target_arch = "aarch64")]
macro_rules! code_address {
    () => {{
        let pc: u64;
        // SAFETY: `adr` reads no memory and touches no flags.
        unsafe { ::core::arch::asm!("adr {0}, .", out(reg) pc, options(nomem, nostack, preserves_flags)) };
        pc
    }};
}

/// Without a way to read the program counter, name the span by its module.
#[doc(hidden)]
#[macro_export]
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
macro_rules! code_address {
    () => {
        $crate::site!(::core::module_path!())
    };
}

/// A per-call-site descriptor in the `ringtrace_sites` section; evaluates to its address.
#[doc(hidden)]
#[macro_export]
macro_rules! site {
    ($label:expr) => {{
        const LABEL: &str = $label;
        const LEN: usize = $crate::__format::site_len(LABEL, ::core::file!());
        #[cfg_attr(not(any(target_vendor = "apple", windows)), unsafe(link_section = "ringtrace_sites"))]
        static SITE: $crate::SiteDescriptor<LEN> =
            $crate::SiteDescriptor($crate::__format::encode_site(LABEL, ::core::file!(), ::core::line!()));
        ::core::ptr::addr_of!(SITE) as usize as u64
    }};
}
