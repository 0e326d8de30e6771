//! An RTT up-channel: a control block laid out as SEGGER's (`_SEGGER_RTT`),
//! which every probe tool finds and reads while the target runs — J-Link,
//! probe-rs, OpenOCD's `rtt server`, pyOCD — with one up-buffer that a
//! [`Streamer`](super::stream::Streamer) writes without blocking.
//!
//! Design constraints:
//! - SEGGER's layout: the ID string `"SEGGER RTT"` in 16 bytes, the counts of
//!   up and down buffers (`int`), then each buffer's name and data pointers,
//!   size, write offset, read offset and flags (`unsigned`, 32 bits); the
//!   probe finds the block by its ID in RAM (or by the `_SEGGER_RTT`
//!   symbol), reads the bytes between the read and write offsets and writes
//!   the read offset back.
//! - The ID is written last, after the rest of the block, so a probe that
//!   finds it finds a whole block.
//! - Non-blocking ("trim" mode): a write takes what fits; the target writes
//!   only the write offset, the probe only the read offset. All accesses are
//!   atomic; nothing here is `unsafe`.
//!
//! ```
//! use ringtrace::bare::rtt::Rtt;
//! use ringtrace::bare::stream::Link;
//!
//! // On a target: `#[unsafe(no_mangle)] static _SEGGER_RTT: Rtt<1024> = Rtt::new();`
//! static RTT: Rtt<64> = Rtt::new();
//! let mut up = RTT.init(c"ringtrace");
//! assert_eq!(up.write(&[1, 2, 3]), 3);
//! assert_eq!(up.write(&[0; 100]), 60); // one byte always stays free
//! ```

use core::sync::atomic::{AtomicU8, AtomicU32, AtomicUsize, Ordering, fence};

use super::stream::Link;

/// The ID a probe looks for.
const ID: &[u8; 10] = b"SEGGER RTT";
/// SEGGER's `SEGGER_RTT_MODE_NO_BLOCK_TRIM`: a write takes what fits.
const MODE_NO_BLOCK_TRIM: u32 = 1;

/// One buffer's descriptor, as SEGGER's `SEGGER_RTT_BUFFER_UP`.
#[repr(C)]
#[derive(Debug)]
struct Buffer {
    name: AtomicUsize,
    data: AtomicUsize,
    size: AtomicU32,
    write: AtomicU32,
    read: AtomicU32,
    flags: AtomicU32,
}

/// An RTT control block with one up-buffer of `N` bytes (and no down-buffer). Put it in a
/// `static` named `_SEGGER_RTT` (with `#[unsafe(no_mangle)]`), so a probe tool given the ELF
/// finds it by name too.
#[repr(C)]
#[derive(Debug)]
pub struct Rtt<const N: usize> {
    id: [AtomicU8; 16],
    max_up: AtomicU32,
    max_down: AtomicU32,
    up: Buffer,
    bytes: [AtomicU8; N],
}

impl<const N: usize> Default for Rtt<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Rtt<N> {
    /// A block not yet found by a probe (its ID not written): call [`init`](Self::init).
    pub const fn new() -> Self {
        const { assert!(N >= 16 && N < u32::MAX as usize, "an RTT buffer of 16 bytes or more") };
        Rtt {
            id: [const { AtomicU8::new(0) }; 16],
            max_up: AtomicU32::new(0),
            max_down: AtomicU32::new(0),
            up: Buffer {
                name: AtomicUsize::new(0),
                data: AtomicUsize::new(0),
                size: AtomicU32::new(0),
                write: AtomicU32::new(0),
                read: AtomicU32::new(0),
                flags: AtomicU32::new(0),
            },
            bytes: [const { AtomicU8::new(0) }; N],
        }
    }

    /// Fills the block — up-buffer 0 named `name`, empty — and then writes its ID, so a probe
    /// may find it; returns the up-channel. Call it once, before the channel is written.
    pub fn init(&'static self, name: &'static core::ffi::CStr) -> UpChannel<N> {
        let up = &self.up;
        up.name.store(name.as_ptr() as usize, Ordering::Relaxed);
        up.data.store(self.bytes.as_ptr() as usize, Ordering::Relaxed);
        up.size.store(N as u32, Ordering::Relaxed);
        up.write.store(0, Ordering::Relaxed);
        up.read.store(0, Ordering::Relaxed);
        up.flags.store(MODE_NO_BLOCK_TRIM, Ordering::Relaxed);
        self.max_up.store(1, Ordering::Relaxed);
        self.max_down.store(0, Ordering::Relaxed);
        // The block is whole before its ID says so (the ID's first byte last).
        fence(Ordering::SeqCst);
        for (slot, &b) in self.id.iter().zip(ID).skip(1) {
            slot.store(b, Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
        self.id[0].store(ID[0], Ordering::Relaxed);
        UpChannel { rtt: self }
    }
}

/// The writing end of an RTT up-buffer: a [`Link`].
#[derive(Debug)]
pub struct UpChannel<const N: usize> {
    rtt: &'static Rtt<N>,
}

impl<const N: usize> UpChannel<N> {
    /// Bytes written that the probe has not read yet (SEGGER's `SEGGER_RTT_GetBytesInBuffer`):
    /// wait for 0 before a reset or a power-down that would lose them.
    pub fn unread(&self) -> usize {
        let up = &self.rtt.up;
        let (read, write) = (up.read.load(Ordering::Acquire) as usize, up.write.load(Ordering::Relaxed) as usize);
        (write + N - read.min(N - 1)) % N
    }
}

impl<const N: usize> Link for UpChannel<N> {
    fn write(&mut self, bytes: &[u8]) -> usize {
        let up = &self.rtt.up;
        let size = N as u32;
        // Acquire: the probe's reads of the bytes it freed are done before they are rewritten.
        let read = up.read.load(Ordering::Acquire);
        let write = up.write.load(Ordering::Relaxed);
        if read >= size || write >= size {
            return 0; // offsets no probe writes: take nothing rather than write out of place
        }
        let free = if read > write { read - write - 1 } else { size - write + read - 1 };
        let n = (free as usize).min(bytes.len());
        for (k, &b) in bytes[..n].iter().enumerate() {
            self.rtt.bytes[(write as usize + k) % N].store(b, Ordering::Relaxed);
        }
        // Release: the bytes are in place before the probe sees the new offset.
        up.write.store(((write as usize + n) % N) as u32, Ordering::Release);
        n
    }
}
