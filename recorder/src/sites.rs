//! Access to this program's `ringtrace_sites` linker section.

/// The recorder's own descriptor, referenced from [`section`] so the section
/// always exists in a program that can dump (otherwise the linker would not
/// define its start and stop symbols). Not there with `off`: nothing is.
#[cfg(not(feature = "off"))]
#[cfg_attr(not(any(target_vendor = "apple", windows)), unsafe(link_section = "ringtrace_sites"))]
#[used]
static ANCHOR: crate::SiteDescriptor<{ ringtrace_format::site_len("ringtrace", file!()) }> =
    crate::SiteDescriptor(ringtrace_format::encode_site("ringtrace", file!(), line!()));

#[cfg(not(feature = "off"))]
unsafe extern "C" {
    #[link_name = "__start_ringtrace_sites"]
    static SITES_START: u8;
    #[link_name = "__stop_ringtrace_sites"]
    static SITES_STOP: u8;
}

/// With `off` there are no sites.
#[cfg(feature = "off")]
pub fn section() -> (u64, &'static [u8]) {
    (0, &[])
}

/// The runtime address and the bytes of the site section.
#[cfg(not(feature = "off"))]
pub fn section() -> (u64, &'static [u8]) {
    core::hint::black_box(core::ptr::addr_of!(ANCHOR));
    let start = core::ptr::addr_of!(SITES_START);
    let stop = core::ptr::addr_of!(SITES_STOP);
    let len = (stop as usize).saturating_sub(start as usize);
    // SAFETY: the linker defines the two symbols around the loaded, read-only
    // `ringtrace_sites` section, which holds `len` initialised bytes.
    let bytes = unsafe { core::slice::from_raw_parts(start, len) };
    (start as usize as u64, bytes)
}
