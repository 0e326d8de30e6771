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
//! With the `stream` feature (tests/tests/external_tools/firmware_stream.rs) it runs 200 rounds
//! — 36,400 spans, nine times what its ring holds — and streams its spans while it runs, over
//! the board's UART (CMSDK UART0), or over RTT (`_SEGGER_RTT`) when a debugger sets
//! `STREAM_RTT`; after each round it waits for the link to take every full frame, or with
//! `STREAM_WAIT` cleared only offers them (what does not fit is dropped, counted). At the end it
//! prints its own counts (`rounds R irq N fib F dropped M I`) and sends each track's end frame.
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
use ringtrace::ring::{Mode, Slot};

/// Rounds of the main loop, and records the main ring holds: all of them
/// (20 rounds of 182 spans), or on Armv6-M (QEMU's micro:bit, 16 KiB of
/// RAM) 2 rounds in 512 records.
#[cfg(all(target_has_atomic = "32", not(feature = "stream")))]
const ROUNDS: u32 = 20;
#[cfg(all(target_has_atomic = "32", feature = "stream"))]
const ROUNDS: u32 = 200;
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
/// A flight recorder's rings overwrite; a stream's stop when full (what the link did not take
/// in time is dropped and counted, not overwritten unseen).
const MODE: Mode = if cfg!(feature = "stream") { Mode::StopWhenFull } else { Mode::Overwrite };
static MAIN: Track = Track::with_mode(&MAIN_SLOTS, MODE);
static IRQ_SLOTS: [Slot; 32] = [const { Slot::new() }; 32];
static IRQ: Track = Track::with_mode(&IRQ_SLOTS, MODE);
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

/// One round of the main loop.
fn one_round(round: u32) -> u32 {
    ringtrace::pulse!(clock = SysTick, "loop");
    fib(10).wrapping_add(middle(round)).wrapping_add(pair(round))
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
    #[cfg(feature = "stream")]
    stream::run(one_round);
    #[cfg(not(feature = "stream"))]
    run_and_dump()
}

/// The rounds, then the dump, written through semihosting.
#[cfg(not(feature = "stream"))]
fn run_and_dump() -> ! {
    let mut total = 0u32;
    for round in 0..ROUNDS {
        total = total.wrapping_add(one_round(round));
    }
    black_box(total);

    // Paused before the count is read (the dump keeps it paused): an interrupt between the read and
    // the pause would be recorded and not counted.
    ringtrace::set_enabled(false);
    let recorded = SYSTICKS.load(Ordering::Relaxed);
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

/// The stream: the rounds, then the counts and the end frames.
#[cfg(feature = "stream")]
mod stream {
    use super::*;
    use ringtrace::bare::rtt::Rtt;
    use ringtrace::bare::stream::{Link, Streamer, UartLink};

    /// Set by a debugger: stream over RTT instead of the UART.
    #[unsafe(no_mangle)]
    static STREAM_RTT: AtomicU32 = AtomicU32::new(0);
    /// Cleared by a debugger: after each round only offer the link what is ready, never wait.
    #[unsafe(no_mangle)]
    static STREAM_WAIT: AtomicU32 = AtomicU32::new(1);
    /// Rounds to run: a debugger may ask for more (a stream to cut in the middle).
    #[unsafe(no_mangle)]
    static STREAM_ROUNDS: AtomicU32 = AtomicU32::new(ROUNDS);
    #[unsafe(no_mangle)]
    static _SEGGER_RTT: Rtt<1024> = Rtt::new();

    /// mps2-an385's CMSDK UART0: data, state (bit 0: transmit buffer full), control (bit 0:
    /// transmit enabled) and the baud divider.
    const UART0: usize = 0x4000_4000;

    fn uart_put(b: u8) -> bool {
        // SAFETY: UART0's registers on mps2-an385; this program is their one user.
        unsafe {
            if ((UART0 + 4) as *const u32).read_volatile() & 1 != 0 {
                return false;
            }
            (UART0 as *mut u32).write_volatile(u32::from(b));
        }
        true
    }

    enum Either {
        Rtt(ringtrace::bare::rtt::UpChannel<1024>),
        Uart(UartLink<fn(u8) -> bool>),
    }

    impl Either {
        /// Bytes the reader has not taken yet: a probe reads an RTT buffer when it polls.
        fn unread(&self) -> usize {
            match self {
                Either::Rtt(up) => up.unread(),
                Either::Uart(_) => 0,
            }
        }
    }

    impl Link for Either {
        fn write(&mut self, bytes: &[u8]) -> usize {
            match self {
                Either::Rtt(up) => up.write(bytes),
                Either::Uart(uart) => uart.write(bytes),
            }
        }
    }

    pub fn run(round: fn(u32) -> u32) -> ! {
        let rounds = STREAM_ROUNDS.load(Ordering::Relaxed);
        let link = if STREAM_RTT.load(Ordering::Relaxed) != 0 {
            Either::Rtt(_SEGGER_RTT.init(c"ringtrace"))
        } else {
            // SAFETY: as in `uart_put`.
            unsafe {
                ((UART0 + 0x10) as *mut u32).write_volatile(16);
                ((UART0 + 8) as *mut u32).write_volatile(1);
            }
            Either::Uart(UartLink(uart_put as fn(u8) -> bool))
        };
        let code = [image(&raw const __stext, &raw const __etext, b"fw-cortex-m")];
        let mut streamer = Streamer::<_, 2>::new(DUMPER.modules(&code), link);
        let wait = STREAM_WAIT.load(Ordering::Relaxed) != 0;
        let mut total = 0u32;
        for r in 0..rounds {
            total = total.wrapping_add(round(r));
            if wait {
                while !streamer.poll() {}
            } else {
                streamer.poll();
            }
        }
        black_box(total);
        // The timer stopped: the counts are final, and nothing records after them.
        // SAFETY: SysTick's control register; this program is its one user.
        unsafe { (0xE000_E010 as *mut u32).write_volatile(0) };
        let (irq, fib) = (SYSTICKS.load(Ordering::Relaxed), FIB_CALLS.load(Ordering::Relaxed));
        let (main_dropped, irq_dropped) = (MAIN.ring().dropped(), IRQ.ring().dropped());
        while !streamer.end() {}
        // The end frames are on the link; exiting before the probe read them would lose them.
        while streamer.link().unread() > 0 {}
        if let Some(mut console) = HostFile::console() {
            let _ = writeln!(console, "rounds {rounds} irq {irq} fib {fib} dropped {main_dropped} {irq_dropped}");
        }
        exit(true);
        halt()
    }
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
