//! The instrumentation macros. With the `off` feature each expands to
//! nothing (or to its expression), so instrumented code carries no trace of
//! the recorder.

/// Starts a span that ends at the end of the enclosing scope.
///
/// - `span!()`: the key is the code address of the call site; `rtconv` names
///   it from the binary's DWARF (function, file and line). No string lands in
///   the binary.
/// - `span!("label")`: the key is a per-call-site static descriptor holding
///   the label, file and line, placed in the `ringtrace_sites` linker section
///   and copied into every dump, so it is named even with no binary at hand.
/// - `span!(clock = Ordered)` / `span!(clock = Ordered, "label")`: the same,
///   reading the counter with another [`Clock`](crate::clock::Clock).
///
/// ```
/// use ringtrace::clock::Serialized;
///
/// fn parse(input: &str) -> usize {
///     let _span = ringtrace::span!();
///     let _inner = ringtrace::span!(clock = Serialized, "count words");
///     input.split_whitespace().count()
/// }
/// assert_eq!(parse("a b c"), 3);
/// ```
#[cfg(not(feature = "off"))]
#[macro_export]
macro_rules! span {
    () => {
        $crate::Span::<$crate::clock::DefaultClock>::enter($crate::code_address!())
    };
    (clock = $clock:ty) => {
        $crate::Span::<$clock>::enter($crate::code_address!())
    };
    (clock = $clock:ty, $label:expr) => {
        $crate::Span::<$clock>::enter($crate::site!($label))
    };
    ($label:expr) => {
        $crate::Span::<$crate::clock::DefaultClock>::enter($crate::site!($label))
    };
}

/// Compiled out by the `off` feature: expands to `()`.
#[cfg(feature = "off")]
#[macro_export]
macro_rules! span {
    ($($anything:tt)*) => {
        ()
    };
}

/// Begins a span to be ended by [`exit`](crate::exit), for spans that do not
/// fit a scope. Keys as for [`span!`].
///
/// ```
/// let token = ringtrace::enter!("request");
/// // ... later, perhaps in another function ...
/// ringtrace::exit(token);
/// ```
#[cfg(not(feature = "off"))]
#[macro_export]
macro_rules! enter {
    () => {
        $crate::enter::<$crate::clock::DefaultClock>($crate::code_address!())
    };
    ($label:expr) => {
        $crate::enter::<$crate::clock::DefaultClock>($crate::site!($label))
    };
}

/// Compiled out by the `off` feature: expands to `()` (and `exit(())` does nothing).
#[cfg(feature = "off")]
#[macro_export]
macro_rules! enter {
    ($($anything:tt)*) => {
        ()
    };
}

/// Times an expression and returns its value unchanged. Time a place by
/// borrowing it: `timed!(&mut v[i])` returns the `&mut`.
///
/// ```
/// let mut v = vec![1, 2, 3];
/// let total: i32 = ringtrace::timed!(v.iter().sum());
/// *ringtrace::timed!("first", &mut v[0]) += total;
/// assert_eq!(v, [7, 2, 3]);
/// ```
#[cfg(not(feature = "off"))]
#[macro_export]
macro_rules! timed {
    ($label:literal, $e:expr) => {{
        let _ringtrace_span = $crate::span!($label);
        $e
    }};
    ($e:expr) => {{
        let _ringtrace_span = $crate::span!();
        $e
    }};
}

/// Compiled out by the `off` feature: expands to the expression.
#[cfg(feature = "off")]
#[macro_export]
macro_rules! timed {
    ($label:literal, $e:expr) => {
        $e
    };
    ($e:expr) => {
        $e
    };
}

/// Records the interval between successive passes of a loop, with one
/// counter read per pass. The first pass records nothing.
///
/// ```
/// for frame in 0..3 {
///     ringtrace::pulse!("frame");
///     std::hint::black_box(frame);
/// }
/// ```
#[cfg(not(feature = "off"))]
#[macro_export]
macro_rules! pulse {
    () => {
        $crate::__pulse_pass!($crate::clock::DefaultClock, $crate::code_address!())
    };
    (clock = $clock:ty) => {
        $crate::__pulse_pass!($clock, $crate::code_address!())
    };
    (clock = $clock:ty, $label:expr) => {
        $crate::__pulse_pass!($clock, $crate::site!($label))
    };
    ($label:expr) => {
        $crate::__pulse_pass!($crate::clock::DefaultClock, $crate::site!($label))
    };
}

/// One pass of a `pulse!`, the last pass kept per thread and call site.
#[doc(hidden)]
#[cfg(all(not(feature = "off"), feature = "std"))]
#[macro_export]
macro_rules! __pulse_pass {
    ($clock:ty, $key:expr) => {{
        $crate::__std::thread_local! {
            static PULSE: ::core::cell::Cell<u64> = const { ::core::cell::Cell::new(0) };
        }
        PULSE.with(|last| {
            let mut pulse = $crate::Pulse::<$clock>::resume($key, last.get());
            pulse.pass();
            last.set(pulse.last_pass());
        })
    }};
}

/// One pass of a `pulse!`, the last pass kept per call site (single-core
/// targets without `std`: one state shared by all contexts).
#[doc(hidden)]
#[cfg(all(not(feature = "off"), not(feature = "std")))]
#[macro_export]
macro_rules! __pulse_pass {
    ($clock:ty, $key:expr) => {{
        static PULSE: $crate::ring::AtomicWord = $crate::ring::AtomicWord::new(0);
        let mut pulse = $crate::Pulse::<$clock>::resume(
            $key,
            $crate::ring::wide(PULSE.load(::core::sync::atomic::Ordering::Relaxed)),
        );
        pulse.pass();
        PULSE.store($crate::ring::word(pulse.last_pass()), ::core::sync::atomic::Ordering::Relaxed);
    }};
}

/// Compiled out by the `off` feature: expands to `()`.
#[cfg(feature = "off")]
#[macro_export]
macro_rules! pulse {
    ($($anything:tt)*) => {
        ()
    };
}

/// The guard `#[trace]` puts in a function: the guard itself, or `()` with `off`.
#[doc(hidden)]
#[macro_export]
#[cfg(not(feature = "off"))]
macro_rules! __traced {
    ($guard:expr) => {
        $guard
    };
}

/// The guard `#[trace]` puts in a function: the guard itself, or `()` with `off`.
#[doc(hidden)]
#[macro_export]
#[cfg(feature = "off")]
macro_rules! __traced {
    ($guard:expr) => {
        ()
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

/// The address of this point in the code, as a span key: 32-bit x86 has no
/// `rip`-relative `lea`, so a call to the next instruction pushes its address
/// and a `pop` takes it back (the key is the `pop`, this function's own).
#[doc(hidden)]
#[macro_export]
#[cfg(target_arch = "x86")]
macro_rules! code_address {
    () => {{
        let pc: u32;
        // SAFETY: the call pushes 4 bytes below the stack pointer, which the `pop` takes back
        // at once: the stack is as it was, and no other memory is touched.
        unsafe { ::core::arch::asm!("call 2f", "2: pop {0}", out(reg) pc, options(nomem, preserves_flags)) };
        u64::from(pc)
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

/// The address of this point in the code, as a span key. Read from `pc`
/// itself, not with `adr rX, .`, which LLVM assembles in Thumb code
/// against the word-aligned PC (an address 2 bytes early, in the previous
/// function). `pc` reads as the reading instruction's address plus 4 in
/// Thumb and plus 8 in A32 — in the code after this point, which may be an
/// inlined callee the key must not be named after — so a `nop` follows and
/// 4 is taken off: the key is the `mov` in Thumb, the `nop` in A32, both
/// this function's own instructions. (Which mode is compiled is not a
/// stable `cfg`; this works in both.)
#[doc(hidden)]
#[macro_export]
#[cfg(target_arch = "arm")]
macro_rules! code_address {
    () => {{
        let pc: usize;
        // SAFETY: a move from `pc` and a `nop` read no memory and touch no flags; valid in Thumb-1, Thumb-2 and A32.
        unsafe { ::core::arch::asm!("mov {0}, pc", "nop", out(reg) pc, options(nomem, nostack, preserves_flags)) };
        pc.wrapping_sub(4) as u64
    }};
}

/// The address of this point in the code, as a span key: `auipc` of 0 is
/// the address of the `auipc` itself.
#[doc(hidden)]
#[macro_export]
#[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
macro_rules! code_address {
    () => {{
        let pc: usize;
        // SAFETY: `auipc` reads no memory and touches nothing but its output register.
        unsafe { ::core::arch::asm!("auipc {0}, 0", out(reg) pc, options(nomem, nostack, preserves_flags)) };
        pc as u64
    }};
}

/// Without a way to read the program counter, name the span by its module.
#[doc(hidden)]
#[macro_export]
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv32",
    target_arch = "riscv64"
)))]
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
