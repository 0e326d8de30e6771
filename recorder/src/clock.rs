//! The span counter: the cheapest monotonic tick source on each target.
//!
//! | target | counter | rate in the dump |
//! |---|---|---|
//! | x86_64 | `rdtsc` (time-stamp counter) | derived offline from two anchors; nominal from CPUID 0x15 when the CPU reports it |
//! | aarch64 | `CNTVCT_EL0` | `CNTFRQ_EL0` (compiled, not tested on this project's machines) |
//! | other, with `std` | monotonic clock in ns | exact |
//!
//! On x86_64 the TSC is assumed invariant (constant rate across P-states and
//! cores), true of every x86 server CPU of the last decade and of KVM guests
//! that expose `invtsc`; `rtconv` derives the rate over the whole run from
//! the anchors, so a wrong nominal rate never skews durations.

use ringtrace_format::{ClockInfo, CounterKind, RateSource};

/// Reads the span counter.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` is available on every x86_64 CPU and has no memory effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ticks: u64;
        // SAFETY: CNTVCT_EL0 is readable from EL0 on Linux and has no memory effects.
        unsafe { core::arch::asm!("mrs {0}, cntvct_el0", out(reg) ticks, options(nomem, nostack, preserves_flags)) };
        ticks
    }
    #[cfg(all(not(any(target_arch = "x86_64", target_arch = "aarch64")), feature = "std"))]
    {
        crate::os::monotonic_ns()
    }
    #[cfg(all(not(any(target_arch = "x86_64", target_arch = "aarch64")), not(feature = "std")))]
    {
        compile_error!("ringtrace has no span counter for this target without `std`; see issue #6 (user clocks)")
    }
}

/// What the counter is, for the dump's clock section.
pub fn info() -> ClockInfo {
    #[cfg(target_arch = "x86_64")]
    {
        let (nominal_hz, rate_source) = match cpuid_tsc_hz() {
            Some(hz) => (hz, RateSource::Cpuid),
            None => (0, RateSource::Unknown),
        };
        ClockInfo { counter: CounterKind::X86Tsc, counter_bits: 64, nominal_hz, rate_source }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let hz: u64;
        // SAFETY: CNTFRQ_EL0 is readable from EL0 and has no memory effects.
        unsafe { core::arch::asm!("mrs {0}, cntfrq_el0", out(reg) hz, options(nomem, nostack, preserves_flags)) };
        ClockInfo {
            counter: CounterKind::Aarch64Cntvct,
            counter_bits: 64,
            nominal_hz: hz,
            rate_source: RateSource::Register,
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        ClockInfo {
            counter: CounterKind::MonotonicNs,
            counter_bits: 64,
            nominal_hz: 1_000_000_000,
            rate_source: RateSource::Exact,
        }
    }
}

/// The TSC rate from CPUID leaf 0x15 (crystal ratio), if the CPU reports it.
#[cfg(target_arch = "x86_64")]
fn cpuid_tsc_hz() -> Option<u64> {
    use core::arch::x86_64::__cpuid;
    let max_leaf = __cpuid(0).eax;
    if max_leaf < 0x15 {
        return None;
    }
    let leaf = __cpuid(0x15);
    let (denominator, numerator, crystal_hz) = (u64::from(leaf.eax), u64::from(leaf.ebx), u64::from(leaf.ecx));
    if denominator == 0 || numerator == 0 || crystal_hz == 0 {
        return None;
    }
    Some(crystal_hz * numerator / denominator)
}
