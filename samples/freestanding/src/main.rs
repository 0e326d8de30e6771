//! Firmware stand-in: records with a ring in a `static`, a counter of its own,
//! nested spans, a named span and a `pulse!()` loop, then writes the dump to
//! stdout with the format crate's no-alloc writer, through raw system calls.
//!
//! Known truth for tests/tests/freestanding.rs. The counter is simulated: each
//! read advances it 100 ticks at a nominal 1 GHz, so times are exact, and it
//! is 32 bits wide and wraps in the first round:
//! - `outer` (named span) 4 times, 700 ns each: its own two reads and three `leaf`s of two;
//! - `freestanding::leaf` (code address, named from DWARF) 12 times, 100 ns each, inside `outer`;
//! - `loop` (pulse) 3 intervals of 900 ns: one pass read, then `outer`'s 8 reads;
//! - then, with recording switched off, `outer` and (in an interrupt's track) a `leaf`, which read
//!   no counter and record nothing; switched on, a `leaf` in the interrupt's track (exit code 3
//!   unless that track holds exactly it) and one more in the main track, at 3600 ns after the
//!   first read: each switch of the off switch and of the track, in either order, is obeyed.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use ringtrace::Track;
use ringtrace::bare::{Target, write_dump};
use ringtrace::clock::Clock;
use ringtrace::ring::Slot;
use ringtrace_format::{Anchor, CounterKind, Module, RateSource, Record, Sink};

/// The program's own counter: a simulated 32-bit cycle counter, 100 ticks
/// per read at 1 GHz, starting just below 2^32 so that it wraps during the
/// first round (the dump then holds compact records, which rtconv unwraps).
struct SimClock;

static TICKS: AtomicU64 = AtomicU64::new(u32::MAX as u64 - 1_000);

impl Clock for SimClock {
    const KIND: CounterKind = CounterKind::User;
    const BITS: u32 = 32;
    fn now() -> u64 {
        (TICKS.fetch_add(100, Ordering::Relaxed) + 100) & u64::from(u32::MAX)
    }
    fn nominal_hz() -> (u64, RateSource) {
        (1_000_000_000, RateSource::User)
    }
}

static SLOTS: [Slot; 64] = [const { Slot::new() }; 64];
static TRACK: Track = Track::new(&SLOTS);
/// An interrupt handler's track, not dumped.
static IRQ_SLOTS: [Slot; 4] = [const { Slot::new() }; 4];
static IRQ: Track = Track::new(&IRQ_SLOTS);

#[inline(never)]
fn leaf(i: u64) -> u64 {
    let _span = ringtrace::span!(clock = SimClock);
    core::hint::black_box(i)
}

#[inline(never)]
fn outer() -> u64 {
    let _span = ringtrace::span!(clock = SimClock, "outer");
    (0..3).map(leaf).sum()
}

mod sys {
    /// `write(2)`: returns bytes written or a negative errno.
    pub fn write(fd: i32, bytes: &[u8]) -> isize {
        let ret: isize;
        // SAFETY: Linux x86_64 `write` (1) reads `bytes.len()` bytes from a valid slice; rcx and r11 are clobbered by `syscall`.
        unsafe {
            core::arch::asm!("syscall", inlateout("rax") 1isize => ret, in("rdi") fd, in("rsi") bytes.as_ptr(),
                in("rdx") bytes.len(), lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        ret
    }

    /// `exit(2)`.
    pub fn exit(code: i32) -> ! {
        // SAFETY: Linux x86_64 `exit` (60) does not return.
        unsafe { core::arch::asm!("syscall", in("rax") 60, in("rdi") code, options(noreturn, nostack)) }
    }
}

/// Standard output as the dump's byte sink (a UART on real hardware).
struct Stdout;

impl Sink for Stdout {
    type Error = isize;
    fn write_all(&mut self, mut bytes: &[u8]) -> Result<(), isize> {
        while !bytes.is_empty() {
            match sys::write(1, bytes) {
                n if n > 0 => bytes = &bytes[n as usize..],
                -4 => continue, // EINTR
                err => return Err(err),
            }
        }
        Ok(())
    }
}

unsafe extern "C" {
    /// Set by the linker: the first byte of the loaded image, and the end of its data.
    static __executable_start: u8;
    static _end: u8;
}

/// The entry point the kernel jumps to, with the stack 16-byte aligned and no
/// return address: align it as a call would leave it, then run [`main`].
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    core::arch::naked_asm!("xor ebp, ebp", "and rsp, -16", "call {main}", "ud2", main = sym main);
}

extern "C" fn main() -> ! {
    ringtrace::install(&TRACK);
    let mut total = 0;
    for _ in 0..4 {
        ringtrace::pulse!(clock = SimClock, "loop");
        total += outer();
    }
    core::hint::black_box(total);

    ringtrace::set_enabled(false);
    total += outer();
    {
        let _irq = ringtrace::interrupt(&IRQ);
        total += leaf(0);
    }
    ringtrace::set_enabled(true);
    {
        let _irq = ringtrace::interrupt(&IRQ);
        total += leaf(1);
    }
    total += leaf(2);
    core::hint::black_box(total);
    if IRQ.ring().written() != 1 {
        sys::exit(3);
    }

    let start = core::ptr::addr_of!(__executable_start) as u64;
    let end = core::ptr::addr_of!(_end) as u64;
    // A static, non-PIE executable is loaded where its ELF file says: bias 0.
    let modules = [Module { start, end, bias: 0, flags: 1, build_id: &[], path: b"freestanding" }];
    let target = Target {
        process_name: b"freestanding",
        thread_name: b"main",
        clock: SimClock::info(),
        // One anchor, at dump time: a narrow counter is placed by it and timed by the nominal rate.
        anchors: &[Anchor { ticks: SimClock::now(), mono_ns: 0, real_ns: 0 }],
        modules: &modules,
    };
    let mut scratch = [Record::default(); 64];
    match write_dump(Stdout, &TRACK, &mut scratch, &target) {
        Ok(_) => sys::exit(0),
        Err(_) => sys::exit(1),
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    sys::exit(101)
}

/// What a libc would give: the memory functions the compiler calls, and the
/// personality routine the prebuilt `core` names (never called: panics abort).
mod rt {
    /// # Safety
    /// As C's `memcpy`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        // SAFETY: the caller passes valid, non-overlapping regions of n bytes.
        unsafe {
            core::arch::asm!("rep movsb", inout("rcx") n => _, inout("rdi") dest => _, inout("rsi") src => _,
                options(nostack, preserves_flags));
        }
        dest
    }

    /// # Safety
    /// As C's `memmove`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        if (dest as usize).wrapping_sub(src as usize) >= n {
            // SAFETY: a forward copy never reads a byte it has written.
            return unsafe { memcpy(dest, src, n) };
        }
        // SAFETY: the caller passes valid regions of n bytes; copying backwards
        // (direction flag set, then cleared as the ABI requires) is safe when dest is above src.
        unsafe {
            core::arch::asm!("std", "rep movsb", "cld", inout("rcx") n => _, inout("rdi") dest.add(n - 1) => _,
                inout("rsi") src.add(n - 1) => _, options(nostack));
        }
        dest
    }

    /// # Safety
    /// As C's `memset`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memset(dest: *mut u8, c: i32, n: usize) -> *mut u8 {
        // SAFETY: the caller passes a valid region of n bytes.
        unsafe {
            core::arch::asm!("rep stosb", inout("rcx") n => _, inout("rdi") dest => _, in("al") c as u8,
                options(nostack, preserves_flags));
        }
        dest
    }

    /// # Safety
    /// As C's `memcmp`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        for i in 0..n {
            // SAFETY: the caller passes valid regions of n bytes.
            let (x, y) = unsafe { (a.add(i).read_volatile(), b.add(i).read_volatile()) };
            if x != y {
                return i32::from(x) - i32::from(y);
            }
        }
        0
    }

    /// # Safety
    /// As C's `bcmp`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        // SAFETY: as memcmp.
        unsafe { memcmp(a, b, n) }
    }

    #[unsafe(no_mangle)]
    extern "C" fn rust_eh_personality() {}
}
