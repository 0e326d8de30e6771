//! The memory orderings of the recording protocols (`ring`, `open`, the
//! installed track), in one place.
//!
//! By default they are what a reader on another core needs: stores that
//! publish are `Release`, loads that consume are `Acquire` (on Arm, a `dmb`
//! each: ten per span). With the `single-core` feature — every recording
//! context and every dump on one core, as on most microcontrollers — there
//! is no other observer: a core, its interrupt handlers included, sees its
//! own memory accesses in program order, so only the compiler must keep
//! that order. The orderings become `Relaxed` and a compiler fence stands
//! where the hardware barrier was; the protocols are otherwise the same.
//! (Not for a part whose second core or DMA reads the rings while they are
//! written.)

use core::sync::atomic::Ordering;

/// Stores `value` into the atomic `$atomic` so that a reader that loads it
/// (with [`consume`]) sees every access before: a `Release` store, or with
/// `single-core` a compiler fence and a `Relaxed` store.
macro_rules! publish {
    ($atomic:expr, $value:expr) => {{
        $crate::order::release();
        $atomic.store($value, $crate::order::RELEASE)
    }};
}
pub(crate) use publish;

/// Loads the atomic `$atomic` so that every access after sees what was
/// [`publish`]ed before its value: an `Acquire` load, or with `single-core`
/// a `Relaxed` load and a compiler fence.
macro_rules! consume {
    ($atomic:expr) => {{
        let value = $atomic.load($crate::order::ACQUIRE);
        $crate::order::acquire();
        value
    }};
}
pub(crate) use consume;

/// The ordering of a store that publishes (call [`release`] just before it).
#[cfg(not(feature = "single-core"))]
pub(crate) const RELEASE: Ordering = Ordering::Release;
/// The ordering of a load that consumes (call [`acquire`] just after it).
#[cfg(not(feature = "single-core"))]
pub(crate) const ACQUIRE: Ordering = Ordering::Acquire;
/// The ordering of a store that publishes (call [`release`] just before it).
#[cfg(feature = "single-core")]
pub(crate) const RELEASE: Ordering = Ordering::Relaxed;
/// The ordering of a load that consumes (call [`acquire`] just after it).
#[cfg(feature = "single-core")]
pub(crate) const ACQUIRE: Ordering = Ordering::Relaxed;

/// Keeps earlier memory accesses before the [`RELEASE`] store that follows:
/// nothing to do where that store is `Release`, a compiler fence otherwise.
#[inline(always)]
pub(crate) fn release() {
    #[cfg(feature = "single-core")]
    core::sync::atomic::compiler_fence(Ordering::Release);
}

/// Keeps later memory accesses after the [`ACQUIRE`] load before it.
#[inline(always)]
pub(crate) fn acquire() {
    #[cfg(feature = "single-core")]
    core::sync::atomic::compiler_fence(Ordering::Acquire);
}

#[cfg(feature = "single-core")]
pub(crate) use core::sync::atomic::compiler_fence as fence;
/// A fence: the hardware's, or with `single-core` the compiler's.
#[cfg(all(not(feature = "single-core"), not(loom)))]
pub(crate) use core::sync::atomic::fence;
#[cfg(all(not(feature = "single-core"), loom))]
pub(crate) use loom::sync::atomic::fence;
