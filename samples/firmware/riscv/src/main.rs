//! A RISC-V (rv32imac) firmware that records spans, run on QEMU's `virt`
//! board by tests/tests/external_tools/firmware.rs. The same known truth as the Cortex-M
//! sample: `fib` `ROUNDS × 177` times nested 10 deep, `middle` `ROUNDS` times
//! holding three `leaf`s each, `loop` (a pulse) `ROUNDS - 1` intervals, and
//! the machine timer interrupt (every 1 ms of the CLINT's 10 MHz `mtime`)
//! recording `irq_work` into a track of its own as many times as it prints
//! (`rounds R irq N`). Spans are timed by `mcycle`, or with the `mtime` feature
//! by the CLINT's `mtime`.
//!
//! With the `stream` feature (tests/tests/external_tools/firmware_stream.rs) it runs 200 rounds
//! and streams its spans while it runs, over the board's NS16550 UART, or over RTT
//! (`_SEGGER_RTT`) when a debugger sets `STREAM_RTT`, as the Cortex-M sample does (its doc
//! says how), printing `rounds R irq N fib F dropped M I` at the end.
//!
//! After a crash (tests/tests/external_tools/firmware_ram.rs): a debugger that
//! sets `FAULT_AT` to N before the loop makes the Nth call of `fib` execute an
//! illegal instruction; the exception handler spins, or with `DUMP_AT_FAULT`
//! set writes `riscv-fault.rtd` and exits.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use core::fmt::Write;
use ringtrace::Track;

use ringtrace::bare::semihosting::{HostFile, exit};
use ringtrace::bare::{Dumper, image};
use ringtrace::ring::{Mode, Slot};
use riscv::interrupt::Interrupt;

#[cfg(not(feature = "stream"))]
const ROUNDS: u32 = 20;
#[cfg(feature = "stream")]
const ROUNDS: u32 = 200;
/// The CLINT of QEMU's virt board: hart 0's `mtimecmp`, and `mtime`, at 10 MHz.
const MTIMECMP: *mut u32 = 0x0200_4000 as *mut u32;
const MTIME: *const u32 = 0x0200_BFF8 as *const u32;
const TIMER_PERIOD: u64 = 10_000; // 1 ms

/// The spans' clock: `mcycle`, or with the `mtime` feature the CLINT's `mtime` (10 MHz).
#[cfg(not(feature = "mtime"))]
type SpanClock = ringtrace::clock::Fast;
#[cfg(feature = "mtime")]
type SpanClock = ringtrace::clock::Mtime;

static MAIN_SLOTS: [Slot; 4096] = [const { Slot::new() }; 4096];
/// A flight recorder's rings overwrite; a stream's stop when full (what the link did not take
/// in time is dropped and counted, not overwritten unseen).
const MODE: Mode = if cfg!(feature = "stream") { Mode::StopWhenFull } else { Mode::Overwrite };
static MAIN: Track = Track::with_mode(&MAIN_SLOTS, MODE);
static IRQ_SLOTS: [Slot; 128] = [const { Slot::new() }; 128];
static IRQ: Track = Track::with_mode(&IRQ_SLOTS, MODE);
static TRACKS: [(&[u8], &Track); 2] = [(b"main", &MAIN), (b"timer", &IRQ)];

static DUMPER: Dumper<'static> = Dumper::new::<SpanClock>(b"fw-riscv").tracks(&TRACKS);

/// Timer interrupts, counted apart from the recorder.
static TIMER_RUNS: AtomicU32 = AtomicU32::new(0);

/// The call of `fib` that faults (0: none), and whether the fault handler writes a dump;
/// set by a debugger.
#[unsafe(no_mangle)]
static FAULT_AT: AtomicU32 = AtomicU32::new(0);
#[unsafe(no_mangle)]
static DUMP_AT_FAULT: AtomicU32 = AtomicU32::new(0);
static FIB_CALLS: AtomicU32 = AtomicU32::new(0);

#[inline(never)]
fn fib(n: u32) -> u32 {
    let _span = ringtrace::span!(clock = SpanClock);
    let call = FIB_CALLS.load(Ordering::Relaxed) + 1;
    FIB_CALLS.store(call, Ordering::Relaxed);
    if call == FAULT_AT.load(Ordering::Relaxed) {
        crash();
    }
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

/// A deliberate fault: an illegal instruction.
#[inline(never)]
fn crash() {
    // SAFETY: traps at once; the exception handler never returns here.
    unsafe { core::arch::asm!("unimp") };
}

#[riscv_rt::exception(riscv::interrupt::Exception::IllegalInstruction)]
fn illegal_instruction(_frame: &riscv_rt::TrapFrame) -> ! {
    if DUMP_AT_FAULT.load(Ordering::Relaxed) != 0 {
        exit(write_dump(c"riscv-fault.rtd"));
    }
    loop {
        core::hint::spin_loop();
    }
}

#[inline(never)]
fn leaf(i: u32) -> u32 {
    let _span = ringtrace::span!(clock = SpanClock);
    black_box(i * 3)
}

/// `leaf` with the bare counter pair instead of a span: what the span's
/// instructions are compared with (samples/firmware/measure).
#[inline(never)]
fn pair(i: u32) -> u32 {
    use ringtrace::clock::Clock;
    let enter = SpanClock::now();
    let r = black_box(i * 3);
    black_box((enter, SpanClock::now()));
    r
}

#[inline(never)]
fn middle(round: u32) -> u32 {
    let _span = ringtrace::span!(clock = SpanClock);
    (round..round + 3).map(leaf).sum()
}

#[inline(never)]
fn irq_work(n: u32) -> u32 {
    let _span = ringtrace::span!(clock = SpanClock);
    black_box(n.wrapping_mul(2654435761))
}

/// Reads the 64-bit `mtime` (high, low, high again: no torn carry).
fn mtime() -> u64 {
    loop {
        // SAFETY: the CLINT's mtime registers are readable on QEMU's virt board.
        let (high, low, again) =
            unsafe { (MTIME.add(1).read_volatile(), MTIME.read_volatile(), MTIME.add(1).read_volatile()) };
        if high == again {
            return (u64::from(high) << 32) | u64::from(low);
        }
    }
}

/// Sets hart 0's next timer interrupt to `at` (high word first at its maximum, so no early match).
fn set_timer(at: u64) {
    // SAFETY: the CLINT's mtimecmp registers are writable on QEMU's virt board.
    unsafe {
        MTIMECMP.add(1).write_volatile(u32::MAX);
        MTIMECMP.write_volatile(at as u32);
        MTIMECMP.add(1).write_volatile((at >> 32) as u32);
    }
}

#[riscv_rt::core_interrupt(Interrupt::MachineTimer)]
fn machine_timer() {
    set_timer(mtime() + TIMER_PERIOD);
    let _context = ringtrace::interrupt(&IRQ);
    let n = TIMER_RUNS.load(Ordering::Relaxed) + 1;
    TIMER_RUNS.store(n, Ordering::Relaxed);
    black_box(irq_work(n));
}

unsafe extern "C" {
    /// riscv-rt's linker script: the start and end of `.text`.
    static __stext: u8;
    static __etext: u8;
}

#[riscv_rt::entry]
fn main() -> ! {
    ringtrace::install(&MAIN);
    // Under `-icount`, QEMU counts `mcycle` in virtual nanoseconds.
    ringtrace::clock::set_core_hz(1_000_000_000);
    // SAFETY: the CLINT's mtime is at MTIME on QEMU's virt board, counting at 10 MHz.
    #[cfg(feature = "mtime")]
    unsafe {
        ringtrace::clock::Mtime::set(MTIME as usize, 10_000_000)
    };
    DUMPER.publish();
    set_timer(mtime() + TIMER_PERIOD);
    // SAFETY: the handler above is installed by riscv-rt; enabling interrupts is this program's choice.
    unsafe {
        riscv::register::mie::set_mtimer();
        riscv::interrupt::enable();
    }
    #[cfg(feature = "stream")]
    stream::run(one_round);
    #[cfg(not(feature = "stream"))]
    run_and_dump()
}

/// One round of the main loop.
fn one_round(round: u32) -> u32 {
    ringtrace::pulse!(clock = SpanClock, "loop");
    fib(10).wrapping_add(middle(round)).wrapping_add(pair(round))
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
    let recorded = TIMER_RUNS.load(Ordering::Relaxed);
    let written = write_dump(c"riscv.rtd");
    if let Some(mut console) = HostFile::console() {
        let _ = writeln!(console, "rounds {ROUNDS} irq {recorded}");
    }
    exit(written);
    halt()
}

/// Writes every track into the host file `name`, through semihosting; whether it was written.
fn write_dump(name: &core::ffi::CStr) -> bool {
    let code = [image(&raw const __stext, &raw const __etext, b"fw-riscv")];
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

    /// The virt board's NS16550: transmit holding register, and the line status register
    /// (bit 5: the transmitter can take a byte).
    const UART: usize = 0x1000_0000;

    fn uart_put(b: u8) -> bool {
        // SAFETY: the NS16550's registers on QEMU's virt board; this program is their one user.
        unsafe {
            if ((UART + 5) as *const u8).read_volatile() & 0x20 == 0 {
                return false;
            }
            (UART as *mut u8).write_volatile(b);
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
            Either::Uart(UartLink(uart_put as fn(u8) -> bool))
        };
        let code = [image(&raw const __stext, &raw const __etext, b"fw-riscv")];
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
        riscv::interrupt::disable();
        let (irq, fib) = (TIMER_RUNS.load(Ordering::Relaxed), FIB_CALLS.load(Ordering::Relaxed));
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
        riscv::asm::wfi();
    }
}
