//! A RISC-V (rv32imac) firmware that records spans, run on QEMU's `virt`
//! board by tests/tests/external_tools/firmware.rs. The same known truth as the Cortex-M
//! sample: `fib` `ROUNDS × 177` times nested 10 deep, `middle` `ROUNDS` times
//! holding three `leaf`s each, `loop` (a pulse) `ROUNDS - 1` intervals, and
//! the machine timer interrupt (every 1 ms of the CLINT's 10 MHz `mtime`)
//! recording `irq_work` into a track of its own as many times as it prints
//! (`rounds R irq N`). Spans are timed by `mcycle`, or with the `mtime` feature
//! by the CLINT's `mtime`.
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
use ringtrace::ring::Slot;
use riscv::interrupt::Interrupt;

const ROUNDS: u32 = 20;
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
static MAIN: Track = Track::new(&MAIN_SLOTS);
static IRQ_SLOTS: [Slot; 128] = [const { Slot::new() }; 128];
static IRQ: Track = Track::new(&IRQ_SLOTS);
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
    let mut total = 0u32;
    for round in 0..ROUNDS {
        ringtrace::pulse!(clock = SpanClock, "loop");
        total = total.wrapping_add(fib(10)).wrapping_add(middle(round)).wrapping_add(pair(round));
    }
    black_box(total);

    let recorded = TIMER_RUNS.load(Ordering::Relaxed); // the dump pauses recording: later ones are not in it
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
