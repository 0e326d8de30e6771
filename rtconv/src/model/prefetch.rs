//! Cache prefetch hints, for loops that know which memory they will read next.

/// Bytes per cache line on the targets this is tuned for.
const LINE: usize = 64;

/// Asks the CPU to start loading the cache lines holding `items`, without
/// waiting for them. A hint only: no effect on what the program computes.
#[inline(always)]
pub fn range<T>(items: &[T]) {
    if !items.is_empty() {
        bytes_at(items.as_ptr().cast(), size_of_val(items));
    }
}

/// [`range`] of the `len` bytes at `start`, for an address computed
/// without a bounds check: the hint never faults, wherever it points.
#[inline(always)]
pub fn bytes_at(start: *const u8, len: usize) {
    if len <= LINE {
        line(start);
        line(start.wrapping_add(len.saturating_sub(1)));
    } else {
        let mut offset = 0;
        while offset < len {
            line(start.wrapping_add(offset));
            offset += LINE;
        }
        line(start.wrapping_add(len - 1));
    }
}

/// [`bytes_at`] of records `first..=last` of `records`, the indices not
/// checked (a hint).
#[inline(always)]
pub fn records(records: &ringtrace_format::read::Records<'_>, first: usize, last: usize) {
    let size = records.record_size();
    let start = records.as_bytes().as_ptr().wrapping_add(first.wrapping_mul(size));
    bytes_at(start, last.wrapping_sub(first).wrapping_add(1).wrapping_mul(size));
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
