//! A Cortex-M firmware that records spans, run by tests/tests/external_tools/firmware.rs on
//! QEMU's `mps2-an385` (Cortex-M3, 25 MHz, built for thumbv7m) and `microbit`
//! (Cortex-M0, built for thumbv6m: Thumb-1 code). Known truth for the test:
//! - `fib` (code address, named from DWARF) `ROUNDS × 177` times: fib(10) makes
//!   177 calls, nested 10 deep;
//! - `middle` `ROUNDS` times, each holding three `leaf`s;
//! - `loop` (a pulse) `ROUNDS - 1` intervals;
//! - the SysTick handler (every 1 ms, 0.25 ms on the M0) records `irq_work`
//!   into a track of its own, as many times as it prints at the end
//!   (`rounds R irq N`).
//!
//! The whole recorder glue is the statics, `SysTick::start`, `install`, the
//! two lines of the handler, the `Dumper` published at start (so a RAM image
//! read by a debugger converts) and written at the end.
//!
//! After a crash (tests/tests/external_tools/firmware_ram.rs): a debugger that
//! sets `FAULT_AT` to N before the loop makes the Nth call of `fib` execute an
//! undefined instruction; the HardFault handler spins, or with `DUMP_AT_FAULT`
//! set writes `cortex-m-fault.rtd` and exits.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use core::fmt::Write;
use cortex_m_rt::{entry, exception};
use ringtrace::Track;

use ringtrace::bare::semihosting::{HostFile, exit};
use ringtrace::bare::{Dumper, image};
use ringtrace::clock::SysTick;
use ringtrace::ring::Slot;

/// Rounds of the main loop, and records the main ring holds: all of them
/// (20 rounds of 182 spans), or on Armv6-M (QEMU's micro:bit, 16 KiB of
/// RAM) 2 rounds in 512 records.
#[cfg(target_has_atomic = "32")]
const ROUNDS: u32 = 20;
#[cfg(target_has_atomic = "32")]
const MAIN_RECORDS: usize = 4096;
#[cfg(not(target_has_atomic = "32"))]
const ROUNDS: u32 = 2;
#[cfg(not(target_has_atomic = "32"))]
const MAIN_RECORDS: usize = 512;
/// The core clock: 25 MHz on mps2-an385 (QEMU's micro:bit clocks SysTick at 16 MHz).
#[cfg(target_has_atomic = "32")]
const CORE_HZ: u32 = 25_000_000;
#[cfg(not(target_has_atomic = "32"))]
const CORE_HZ: u32 = 16_000_000;
/// SysTick interrupts per second: enough for a few in each run.
#[cfg(target_has_atomic = "32")]
const TICKS_PER_SECOND: u32 = 1000;
#[cfg(not(target_has_atomic = "32"))]
const TICKS_PER_SECOND: u32 = 4000;

static MAIN_SLOTS: [Slot; MAIN_RECORDS] = [const { Slot::new() }; MAIN_RECORDS];
static MAIN: Track = Track::new(&MAIN_SLOTS);
static IRQ_SLOTS: [Slot; 32] = [const { Slot::new() }; 32];
static IRQ: Track = Track::new(&IRQ_SLOTS);
static TRACKS: [(&[u8], &Track); 2] = [(b"main", &MAIN), (b"SysTick", &IRQ)];

static DUMPER: Dumper<'static> = Dumper::new::<SysTick>(b"fw-cortex-m").tracks(&TRACKS);

/// SysTick handler runs, counted apart from the recorder.
static SYSTICKS: AtomicU32 = AtomicU32::new(0);

/// The call of `fib` that faults (0: none), and whether the fault handler writes a dump;
/// set by a debugger.
#[unsafe(no_mangle)]
static FAULT_AT: AtomicU32 = AtomicU32::new(0);
#[unsafe(no_mangle)]
static DUMP_AT_FAULT: AtomicU32 = AtomicU32::new(0);
static FIB_CALLS: AtomicU32 = AtomicU32::new(0);

#[inline(never)]
fn fib(n: u32) -> u32 {
    let _span = ringtrace::span!(clock = SysTick);
    let call = FIB_CALLS.load(Ordering::Relaxed) + 1;
    FIB_CALLS.store(call, Ordering::Relaxed);
    if call == FAULT_AT.load(Ordering::Relaxed) {
        crash();
    }
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

/// A deliberate fault: an undefined instruction (a UsageFault, escalated to HardFault).
#[inline(never)]
fn crash() {
    // SAFETY: traps at once; the HardFault handler never returns here.
    unsafe { core::arch::asm!("udf #0") };
}

#[exception]
unsafe fn HardFault(_frame: &cortex_m_rt::ExceptionFrame) -> ! {
    if DUMP_AT_FAULT.load(Ordering::Relaxed) != 0 {
        exit(write_dump(c"cortex-m-fault.rtd"));
    }
    loop {
        core::hint::spin_loop();
    }
}

#[inline(never)]
fn leaf(i: u32) -> u32 {
    let _span = ringtrace::span!(clock = SysTick);
    black_box(i * 3)
}

/// `leaf` with the bare counter pair instead of a span: what the span's
/// instructions are compared with (samples/firmware/measure).
#[inline(never)]
fn pair(i: u32) -> u32 {
    use ringtrace::clock::Clock;
    let enter = SysTick::now();
    let r = black_box(i * 3);
    black_box((enter, SysTick::now()));
    r
}

#[inline(never)]
fn middle(round: u32) -> u32 {
    let _span = ringtrace::span!(clock = SysTick);
    (round..round + 3).map(leaf).sum()
}

#[inline(never)]
fn irq_work(n: u32) -> u32 {
    let _span = ringtrace::span!(clock = SysTick);
    black_box(n.wrapping_mul(2654435761))
}

#[exception]
fn SysTick() {
    SysTick::on_reload();
    let _context = ringtrace::interrupt(&IRQ);
    let n = SYSTICKS.load(Ordering::Relaxed) + 1;
    SYSTICKS.store(n, Ordering::Relaxed);
    black_box(irq_work(n));
}

unsafe extern "C" {
    /// cortex-m-rt's linker script: the start and end of `.text`.
    static __stext: u8;
    static __etext: u8;
}

#[entry]
fn main() -> ! {
    ringtrace::install(&MAIN);
    // SAFETY: privileged, on a Cortex-M, and nothing else uses SysTick.
    unsafe { SysTick::start(CORE_HZ / TICKS_PER_SECOND - 1, CORE_HZ) };
    DUMPER.publish();
    let mut total = 0u32;
    for round in 0..ROUNDS {
        ringtrace::pulse!(clock = SysTick, "loop");
        total = total.wrapping_add(fib(10)).wrapping_add(middle(round)).wrapping_add(pair(round));
    }
    black_box(total);

    let recorded = SYSTICKS.load(Ordering::Relaxed); // the dump pauses recording: later ones are not in it
    let written = write_dump(c"cortex-m.rtd");
    if let Some(mut console) = HostFile::console() {
        let _ = writeln!(console, "rounds {ROUNDS} irq {recorded}");
    }
    exit(written);
    halt()
}

/// Writes every track into the host file `name`, through semihosting; whether it was written.
fn write_dump(name: &core::ffi::CStr) -> bool {
    let code = [image(&raw const __stext, &raw const __etext, b"fw-cortex-m")];
    let dumper = DUMPER.modules(&code);
    HostFile::create(name).map(|file| dumper.write(file).is_ok()) == Some(true)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    exit(false);
    halt()
}

/// Where a run ends without a debugger to exit to.
fn halt() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}
