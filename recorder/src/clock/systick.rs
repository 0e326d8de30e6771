//! SysTick as a span counter, on every Cortex-M (M0/M0+ included, and
//! QEMU, which models no DWT cycle counter): the 24-bit down-counter at the
//! core clock, extended by counting its reloads in the SysTick handler.
//!
//! ```ignore
//! ringtrace::clock::SysTick::start(25_000 - 1, 25_000_000); // 1 ms periods of a 25 MHz core clock
//! #[exception] fn SysTick() { ringtrace::clock::SysTick::on_reload(); /* ... */ }
//! let _span = ringtrace::span!(clock = ringtrace::clock::SysTick);
//! ```

use core::sync::atomic::{AtomicU32, Ordering};

use super::Clock;
use ringtrace_format::{CounterKind, RateSource};

const SYST_CSR: *mut u32 = 0xE000_E010 as *mut u32;
const SYST_RVR: *mut u32 = 0xE000_E014 as *mut u32;
const SYST_CVR: *mut u32 = 0xE000_E018 as *mut u32;
/// Interrupt Control and State Register; bit 26 is PENDSTSET (a SysTick exception is pending).
const ICSR: *const u32 = 0xE000_ED04 as *const u32;
const PENDSTSET: u32 = 1 << 26;

/// Reloads counted so far (written only by [`SysTick::on_reload`]).
static RELOADS: AtomicU32 = AtomicU32::new(0);
/// The reload value, and the core clock in Hz, as [`SysTick::start`] set them.
static RELOAD: AtomicU32 = AtomicU32::new(0);
static HZ: AtomicU32 = AtomicU32::new(0);

/// The SysTick counter, with its reloads counted: 32 bits of ticks at the
/// core clock (wrapping, which `rtconv` unwraps). Time between two reads
/// is exact as long as the SysTick handler runs [`SysTick::on_reload`]
/// within one period of each reload.
#[derive(Clone, Copy, Debug, Default)]
pub struct SysTick;

impl SysTick {
    /// Starts SysTick on the core clock, `reload + 1` ticks a period (at
    /// most 2^24), with its interrupt on; `hz` is the core clock, for the dump.
    ///
    /// # Safety
    ///
    /// On a Cortex-M core, in privileged mode, with nothing else using SysTick.
    pub unsafe fn start(reload: u32, hz: u32) {
        let reload = reload & 0x00FF_FFFF;
        RELOAD.store(reload, Ordering::Relaxed);
        HZ.store(hz, Ordering::Relaxed);
        // SAFETY: the caller runs privileged on a Cortex-M; these are SysTick's architected registers.
        unsafe {
            SYST_RVR.write_volatile(reload);
            SYST_CVR.write_volatile(0);
            SYST_CSR.write_volatile(0b111); // CLKSOURCE = core clock, TICKINT, ENABLE
        }
    }

    /// Counts one reload: the first thing the SysTick handler does.
    #[inline(always)]
    pub fn on_reload() {
        // Only the handler writes, and it does not preempt itself: no read-modify-write needed
        // (Armv6-M has none).
        RELOADS.store(RELOADS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

impl Clock for SysTick {
    const KIND: CounterKind = CounterKind::ArmSysTick;
    const BITS: u32 = 32;

    #[inline(always)]
    fn now() -> u64 {
        let period = RELOAD.load(Ordering::Relaxed).wrapping_add(1);
        loop {
            // A reload whose handler has not run yet shows as a pending SysTick: count it, unless it
            // happened between the two looks at it (then the count read is ambiguous: read again).
            let reloads = RELOADS.load(Ordering::Relaxed);
            // SAFETY: ICSR and SYST_CVR are readable architected registers on every Cortex-M.
            let (pending, value, pending_after) = unsafe {
                let pending = ICSR.read_volatile() & PENDSTSET != 0;
                let value = SYST_CVR.read_volatile();
                (pending, value, ICSR.read_volatile() & PENDSTSET != 0)
            };
            if pending == pending_after && RELOADS.load(Ordering::Relaxed) == reloads {
                let periods = reloads.wrapping_add(u32::from(pending));
                let into = period.wrapping_sub(1).wrapping_sub(value);
                return u64::from(periods.wrapping_mul(period).wrapping_add(into));
            }
        }
    }

    fn nominal_hz() -> (u64, RateSource) {
        super::stated_hz(&HZ)
    }
}
