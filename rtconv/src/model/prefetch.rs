//! Cache prefetch hints, for loops that know which memory they will read next.

/// Bytes per cache line on the targets this is tuned for.
const LINE: usize = 64;

/// Asks the CPU to start loading the cache lines holding `items`, without
/// waiting for them. A hint only: no effect on what the program computes.
#[inline(always)]
pub fn range<T>(items: &[T]) {
    let start = items.as_ptr().cast::<u8>();
    let len = std::mem::size_of_val(items);
    if len <= LINE {
        // At most two lines: the first byte's and the last byte's (often the same).
        line(start);
        line(start.wrapping_add(len.saturating_sub(1)));
        return;
    }
    let mut offset = 0;
    while offset < len {
        line(start.wrapping_add(offset));
        offset += LINE;
    }
    if len > 0 {
        // The last byte's line, which the steps above can miss when `start` is not line-aligned.
        line(start.wrapping_add(len - 1));
    }
}

#[inline(always)]
fn line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is a hint: it never faults, reads nothing into the
    // program and writes nothing, whatever the address (here one inside a live slice).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
