//! RISC-V without an OS: the `mcycle` counter (machine mode), 64 bits, at
//! the core clock. On rv32 its halves are read high, low, high again, so a
//! carry between them is never read torn.

use super::{Clock, Fast, Fenced, Ordered, Serialized};
use ringtrace_format::{CounterKind, RateSource};

#[inline(always)]
fn mcycle() -> u64 {
    #[cfg(target_arch = "riscv64")]
    {
        let cycles: u64;
        // SAFETY: reading a counter CSR has no side effect.
        unsafe { core::arch::asm!("csrr {0}, mcycle", out(reg) cycles, options(nomem, nostack, preserves_flags)) };
        cycles
    }
    #[cfg(target_arch = "riscv32")]
    loop {
        let (high, low, again): (u32, u32, u32);
        // SAFETY: reading counter CSRs has no side effect.
        unsafe {
            core::arch::asm!("csrr {0}, mcycleh", "csrr {1}, mcycle", "csrr {2}, mcycleh",
                out(reg) high, out(reg) low, out(reg) again, options(nomem, nostack, preserves_flags));
        }
        if high == again {
            return (u64::from(high) << 32) | u64::from(low);
        }
    }
}

#[inline(always)]
fn fenced_mcycle() -> u64 {
    // SAFETY: `fence` only orders memory accesses.
    unsafe { core::arch::asm!("fence", options(nostack, preserves_flags)) };
    mcycle()
}

/// The core clock, which only the program knows: set it once with
/// [`set_core_hz`] so dumps carry it as the nominal rate.
static CORE_HZ: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// States the core clock (the rate of `mcycle`) for the dump.
pub fn set_core_hz(hz: u32) {
    CORE_HZ.store(hz, core::sync::atomic::Ordering::Relaxed);
}

clocks!(CounterKind::RiscvMcycle, 64, super::stated_hz(&CORE_HZ);
    Fast => mcycle(), Ordered => fenced_mcycle(), Serialized => fenced_mcycle(),
    Fenced => mcycle(); enter fenced_mcycle());

/// The platform timer `mtime` (the CLINT's or ACLINT's, 64 bits at a fixed
/// rate, e.g. 10 MHz on QEMU's virt): slower than `mcycle` to read (a bus
/// access) but at a rate that does not follow the core clock. Tell it where
/// the register is and its rate once with [`Mtime::set`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Mtime;

static MTIME_ADDRESS: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
static MTIME_HZ: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

impl Mtime {
    /// `mtime` is the 64-bit register at `address` (QEMU virt: `0x0200_BFF8`), counting at `hz`.
    ///
    /// # Safety
    ///
    /// `address` is the platform's readable `mtime` register, aligned to 8 bytes.
    pub unsafe fn set(address: usize, hz: u32) {
        MTIME_HZ.store(hz, core::sync::atomic::Ordering::Relaxed);
        MTIME_ADDRESS.store(address, core::sync::atomic::Ordering::Relaxed);
    }
}

impl Clock for Mtime {
    const KIND: CounterKind = CounterKind::RiscvMtime;
    const BITS: u32 = 64;

    #[inline(always)]
    fn now() -> u64 {
        let address = MTIME_ADDRESS.load(core::sync::atomic::Ordering::Relaxed);
        if address == 0 {
            return 0; // not set: every span is 0 long, which a dump shows
        }
        let low = address as *const u32;
        // SAFETY: `set`'s caller vouched for an aligned, readable 64-bit `mtime` at `address`.
        loop {
            let (high, low_word, again) =
                unsafe { (low.add(1).read_volatile(), low.read_volatile(), low.add(1).read_volatile()) };
            if high == again {
                return (u64::from(high) << 32) | u64::from(low_word);
            }
        }
    }

    fn nominal_hz() -> (u64, RateSource) {
        super::stated_hz(&MTIME_HZ)
    }
}
