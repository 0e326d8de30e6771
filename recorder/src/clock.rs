//! Span counters: the cheapest monotonic tick source on each target, and the
//! [`Clock`] trait for counters the program supplies.
//!
//! | clock | target | instruction | ordering | caveat |
//! |---|---|---|---|---|
//! | [`Fast`] (default) | x86_64 | `rdtsc` | none: the CPU may execute it before earlier or after later instructions | cheapest; a span around a few instructions may be skewed by out-of-order execution |
//! | [`Ordered`] | x86_64 | `rdtscp` | waits for all earlier instructions to execute; later ones may start | a few ns more per read |
//! | [`Serialized`] | x86_64 | `lfence; rdtsc` | nothing earlier is still executing, nothing later has started | the most exact and the most costly (see docs/PERFORMANCE.md) |
//! | [`Fenced`] | x86_64 | `lfence; rdtsc` at a span's start, `rdtsc` at its end | the start waits for earlier instructions; the end is [`Fast`]'s | a span never starts early; its end may still be read before its last instructions finish |
//! | [`Fast`], [`Ordered`], [`Serialized`], [`Fenced`] | aarch64 | `mrs CNTVCT_EL0` (`isb` first for Ordered, Serialized and Fenced's start) | as for x86_64 | nominal rate from `CNTFRQ_EL0` (`qemu-aarch64` 10.0 reads 0 there: the anchors give the rate); tested under `qemu-aarch64` (`tests/tests/external_tools/aarch64.rs`; its counter follows the host's wall clock), not on aarch64 hardware |
//! | [`Fast`] and the others | any other target, with `std` | OS monotonic clock | a syscall or vDSO call | nanoseconds, exact rate; ~20 ns per read |
//! | [`Fast`] (`Ordered`, `Serialized`: `dsb; isb` first) | Cortex-M3/M4/M7/M33 (Armv7-M, Armv8-M), `no_std` | DWT `CYCCNT` (32 bits; call `enable_cycle_counter` once) | as for x86_64 | the core clock rate is the program's to state; **compiled, not run: QEMU models no DWT** |
//! | `SysTick` (and every clock on Armv6-M, which has no DWT) | any Cortex-M, `no_std` | SysTick's down-counter plus its reloads, counted by the handler | none | run on QEMU's mps2-an385 (M3) and micro:bit (M0) by `tests/tests/external_tools/firmware.rs` |
//! | [`Fast`] (`Ordered`, `Serialized`: `fence` first) | RISC-V, `no_std`, machine mode | `mcycle` (`mcycleh` too on rv32) | none | state the core clock with `set_core_hz`; run on QEMU's virt (rv32, rv64) |
//! | `Mtime` | RISC-V, `no_std` | the platform timer `mtime` (memory-mapped; `Mtime::set` its address and rate) | none | a fixed rate; run on QEMU's virt (rv32) |
//! | your own [`Clock`] | anything, `no_std` | e.g. a timer peripheral | yours | counters narrower than 64 bits wrap; `rtconv` unwraps them |
//!
//! **Invariant TSC.** On x86_64 the TSC is assumed to tick at a constant rate
//! on every core (CPUID `invtsc`, Linux `constant_tsc nonstop_tsc`), true of
//! every x86 server CPU of the last decade. On an older CPU whose TSC follows
//! the core clock, durations are skewed by frequency changes, and spans that
//! migrate between cores may even go backwards; `rtconv` reports such spans
//! as anomalies. **In VMs** the hypervisor usually passes the host TSC through
//! with an offset (KVM with `invtsc`, as on this project's machines); where it
//! traps `rdtsc` instead, every read costs a VM exit (microseconds), which the
//! bench shows at once. The rate is never taken on trust: the dump carries
//! time anchors {ticks, monotonic ns, realtime ns} from the start of recording
//! and from dump time, and `rtconv` derives the rate over the whole run from
//! them. An anchor is the tightest of 16 (ordered counter read,
//! `CLOCK_MONOTONIC`, ordered counter read) triples after both clocks are
//! warmed, realtime placed by its own triples (`os::anchor`): a few µs each,
//! at the first span, at each dump and every 20 ms of a stream; good to
//! ~0.1 µs (`tests/tests/clock.rs`). Nothing calibrates at start-up.

use ringtrace_format::{ClockInfo, CounterKind, RateSource};

/// A span counter.
pub trait Clock {
    /// Which counter this is, for the dump.
    const KIND: CounterKind;
    /// Significant bits: 64, or fewer for a counter that wraps (a 32-bit
    /// Cortex-M `CYCCNT` is 32).
    const BITS: u32;
    /// Reads the counter.
    fn now() -> u64;
    /// Reads the counter at a span's start: [`now`](Self::now), except for
    /// a clock that orders its enter read after earlier work ([`Fenced`]).
    #[inline(always)]
    fn enter_now() -> u64 {
        Self::now()
    }
    /// The nominal rate in Hz and where it came from; `(0, RateSource::Unknown)`
    /// if unknown (the dump's anchors still give it).
    fn nominal_hz() -> (u64, RateSource) {
        (0, RateSource::Unknown)
    }
    /// The clock section's description of this counter.
    fn info() -> ClockInfo {
        let (nominal_hz, rate_source) = Self::nominal_hz();
        ClockInfo { counter: Self::KIND, counter_bits: Self::BITS, nominal_hz, rate_source }
    }
}

/// The cheapest counter read: `rdtsc` on x86_64, `CNTVCT_EL0` on aarch64.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fast;
/// A read that waits for earlier instructions: `rdtscp`, or `isb; mrs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ordered;
/// A fully serialized read: `lfence; rdtsc` (both sides fenced), or `isb; mrs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serialized;
/// [`Fast`] at a span's end, an ordered read at its start (`lfence; rdtsc`,
/// or `isb; mrs`): the enter stamp cannot be taken while earlier work is
/// still executing, so a span never starts early; the exit read stays as
/// cheap as `Fast`'s (it may run a little late, inside the next span's
/// shadow). See docs/PERFORMANCE.md for what each mode costs and how far
/// its stamps run early or late.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fenced;

/// The clock `span!()` and every other form use unless told otherwise.
/// Cargo features `clock-fenced`, `clock-ordered` and `clock-serialized`
/// change it for the whole program.
#[cfg(not(any(feature = "clock-ordered", feature = "clock-serialized", feature = "clock-fenced")))]
pub type DefaultClock = Fast;
/// The clock `span!()` and every other form use unless told otherwise.
#[cfg(all(feature = "clock-fenced", not(any(feature = "clock-ordered", feature = "clock-serialized"))))]
pub type DefaultClock = Fenced;
/// The clock `span!()` and every other form use unless told otherwise.
#[cfg(all(feature = "clock-ordered", not(feature = "clock-serialized")))]
pub type DefaultClock = Ordered;
/// The clock `span!()` and every other form use unless told otherwise.
#[cfg(feature = "clock-serialized")]
pub type DefaultClock = Serialized;

/// The calibration entry ([`ClockMode`](ringtrace_format::ClockMode)) that
/// describes [`DefaultClock`]: `Fast` for `Fast` and `Fenced` (whose end read
/// is `Fast`'s), as `rtconv --calibrated` reads it.
#[cfg(feature = "std")]
pub(crate) const DEFAULT_MODE: ringtrace_format::ClockMode = if cfg!(feature = "clock-serialized") {
    ringtrace_format::ClockMode::Serialized
} else if cfg!(feature = "clock-ordered") {
    ringtrace_format::ClockMode::Ordered
} else {
    ringtrace_format::ClockMode::Fast
};

/// Reads the default clock.
#[inline(always)]
pub fn now() -> u64 {
    DefaultClock::now()
}

/// The default clock's description, for the dump.
pub fn info() -> ClockInfo {
    DefaultClock::info()
}

/// Implements [`Clock`] for each zero-sized clock `$t`: counter `$kind`,
/// `$bits` wide, read by `$read` (and by `$enter` at a span's start, if
/// given), nominal rate `$hz`. Every target's `Fast`, `Ordered`,
/// `Serialized` and `Fenced` are made by it.
macro_rules! clocks {
    ($kind:expr, $bits:expr, $hz:expr; $($t:ty => $read:expr $(; enter $enter:expr)?),+ $(,)?) => {$(
        impl Clock for $t {
            const KIND: CounterKind = $kind;
            const BITS: u32 = $bits;
            #[inline(always)]
            fn now() -> u64 {
                $read
            }
            $(
                #[inline(always)]
                fn enter_now() -> u64 {
                    $enter
                }
            )?
            fn nominal_hz() -> (u64, RateSource) {
                $hz
            }
        }
    )+};
}

/// A rate the program states at run time (`0`: not stated), as a nominal rate.
#[cfg(target_os = "none")]
fn stated_hz(hz: &core::sync::atomic::AtomicU32) -> (u64, RateSource) {
    match hz.load(core::sync::atomic::Ordering::Relaxed) {
        0 => (0, RateSource::Unknown),
        hz => (u64::from(hz), RateSource::User),
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
mod arch {
    //! The TSC, on x86_64 and on 32-bit x86 (i686: SSE2's `lfence` is in its baseline).
    use super::*;
    #[cfg(target_arch = "x86")]
    use core::arch::x86;
    #[cfg(target_arch = "x86_64")]
    use core::arch::x86_64 as x86;
    use x86::{__rdtscp, _mm_lfence, _rdtsc};

    fn cpuid_hz() -> (u64, RateSource) {
        match cpuid_tsc_hz() {
            Some(hz) => (hz, RateSource::Cpuid),
            None => (0, RateSource::Unknown),
        }
    }

    clocks!(CounterKind::X86Tsc, 64, cpuid_hz();
        // SAFETY: `rdtsc` exists on every x86_64 and i686 CPU and has no memory effects.
        Fast => unsafe { _rdtsc() },
        Ordered => {
            let mut aux = 0u32;
            // SAFETY: `rdtscp` exists on every x86 CPU this crate supports
            // (all since 2006); it writes only `aux`, a valid local.
            unsafe { __rdtscp(&mut aux) }
        },
        // SAFETY: `lfence` and `rdtsc` exist on every x86_64 and i686 CPU (SSE2 is part of
        // both baselines) and have no memory effects.
        Serialized => unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        },
        // SAFETY: as for Fast and Serialized.
        Fenced => unsafe { _rdtsc() }; enter unsafe {
            _mm_lfence();
            _rdtsc()
        },
    );

    /// The TSC rate from CPUID leaf 0x15 (crystal ratio), if the CPU reports it.
    fn cpuid_tsc_hz() -> Option<u64> {
        use x86::__cpuid;
        if __cpuid(0).eax < 0x15 {
            return None;
        }
        let leaf = __cpuid(0x15);
        let (denominator, numerator, crystal_hz) = (u64::from(leaf.eax), u64::from(leaf.ebx), u64::from(leaf.ecx));
        if denominator == 0 || numerator == 0 || crystal_hz == 0 {
            return None;
        }
        Some(crystal_hz * numerator / denominator)
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    //! Run under `qemu-aarch64` by tests/tests/external_tools/aarch64.rs; not on aarch64 hardware here.
    use super::*;

    #[inline(always)]
    fn cntvct() -> u64 {
        let ticks: u64;
        // SAFETY: CNTVCT_EL0 is readable from EL0 on Linux and has no memory effects.
        unsafe { core::arch::asm!("mrs {0}, cntvct_el0", out(reg) ticks, options(nomem, nostack, preserves_flags)) };
        ticks
    }

    #[inline(always)]
    fn isb_cntvct() -> u64 {
        let ticks: u64;
        // SAFETY: `isb` only orders the instruction stream; reading CNTVCT_EL0 is as above.
        unsafe {
            core::arch::asm!("isb", "mrs {0}, cntvct_el0", out(reg) ticks, options(nomem, nostack, preserves_flags))
        };
        ticks
    }

    fn cntfrq() -> (u64, RateSource) {
        let hz: u64;
        // SAFETY: CNTFRQ_EL0 is readable from EL0 and has no memory effects.
        unsafe { core::arch::asm!("mrs {0}, cntfrq_el0", out(reg) hz, options(nomem, nostack, preserves_flags)) };
        (hz, RateSource::Register)
    }

    clocks!(CounterKind::Aarch64Cntvct, 64, cntfrq();
        Fast => cntvct(), Ordered => isb_cntvct(), Serialized => isb_cntvct(),
        Fenced => cntvct(); enter isb_cntvct());
}

#[cfg(all(not(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64")), feature = "std"))]
mod arch {
    //! No cycle counter: the OS monotonic clock in nanoseconds.
    use super::*;

    use crate::os::monotonic_ns;
    clocks!(CounterKind::MonotonicNs, 64, (1_000_000_000, RateSource::Exact);
        Fast => monotonic_ns(), Ordered => monotonic_ns(), Serialized => monotonic_ns(), Fenced => monotonic_ns());
}

#[cfg(all(target_arch = "arm", target_os = "none", target_has_atomic = "32", not(feature = "std")))]
mod arch {
    //! Cortex-M3/M4/M7/M33: the DWT cycle counter `CYCCNT`, 32 bits at the
    //! core clock. **Compiled for `thumbv7em-none-eabihf` in CI, not run on
    //! hardware here.** The program enables it once ([`enable_cycle_counter`])
    //! and states the core clock as the nominal rate in its dump.
    use super::*;

    const DEMCR: *mut u32 = 0xE000_EDFC as *mut u32;
    const DWT_CTRL: *mut u32 = 0xE000_1000 as *mut u32;
    const DWT_CYCCNT: *const u32 = 0xE000_1004 as *const u32;

    /// Turns on the DWT cycle counter (DEMCR.TRCENA, DWT_CTRL.CYCCNTENA).
    ///
    /// # Safety
    ///
    /// Only on a Cortex-M core with a DWT unit, in privileged mode.
    pub unsafe fn enable_cycle_counter() {
        // SAFETY: the caller runs on a Cortex-M with a DWT; these are its architected registers.
        unsafe {
            DEMCR.write_volatile(DEMCR.read_volatile() | 1 << 24);
            DWT_CTRL.write_volatile(DWT_CTRL.read_volatile() | 1);
        }
    }

    #[inline(always)]
    fn cyccnt() -> u64 {
        // SAFETY: DWT_CYCCNT is a readable architected register on the cores this module is for.
        u64::from(unsafe { DWT_CYCCNT.read_volatile() })
    }

    #[inline(always)]
    fn isb_cyccnt() -> u64 {
        // SAFETY: `dsb; isb` only order memory accesses and the instruction stream.
        unsafe { core::arch::asm!("dsb", "isb", options(nostack, preserves_flags)) };
        cyccnt()
    }

    clocks!(CounterKind::ArmDwtCyccnt, 32, (0, RateSource::Unknown);
        Fast => cyccnt(), Ordered => isb_cyccnt(), Serialized => isb_cyccnt(),
        Fenced => cyccnt(); enter isb_cyccnt());
}

#[cfg(all(target_arch = "arm", target_os = "none", target_has_atomic = "32", not(feature = "std")))]
pub use arch::enable_cycle_counter;

/// Armv6-M (Cortex-M0/M0+/M1) has no DWT cycle counter: every clock is SysTick there.
#[cfg(all(target_arch = "arm", target_os = "none", not(target_has_atomic = "32"), not(feature = "std")))]
mod arch {
    use super::*;

    clocks!(CounterKind::ArmSysTick, 32, SysTick::nominal_hz();
        Fast => SysTick::now(), Ordered => SysTick::now(), Serialized => SysTick::now(), Fenced => SysTick::now());
}

#[cfg(all(target_arch = "arm", target_os = "none"))]
mod systick;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub use systick::SysTick;

#[cfg(all(any(target_arch = "riscv32", target_arch = "riscv64"), target_os = "none", not(feature = "std")))]
mod riscv;
#[cfg(all(any(target_arch = "riscv32", target_arch = "riscv64"), target_os = "none", not(feature = "std")))]
pub use riscv::{Mtime, set_core_hz};

#[cfg(all(
    not(any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "aarch64",
        all(target_arch = "arm", target_os = "none"),
        all(any(target_arch = "riscv32", target_arch = "riscv64"), target_os = "none")
    )),
    not(feature = "std")
))]
compile_error!("ringtrace has no built-in counter for this target without `std`: implement `Clock` for yours");
