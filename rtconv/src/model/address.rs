//! Where a span key points: into the dump's site section, into a module, or nowhere known.
//!
//! This is the one place that turns a runtime address into a
//! (module, file-relative address) pair.

use super::trace::{ModuleEntry, Trace};

/// What a key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A site descriptor at this offset in the copied site section.
    Site {
        /// Offset from the section's start.
        offset: usize,
    },
    /// A code address in a module.
    Module {
        /// Index into `Trace::modules`.
        index: usize,
        /// The address as the module's ELF file sees it (runtime minus load bias).
        file_address: u64,
    },
    /// Outside every known range.
    Unmapped,
}

/// Classifies `key`. Site descriptors win over modules, since the site
/// section also lies inside a module's range.
pub fn locate(trace: &Trace, key: u64) -> Location {
    if let Some(sites) = &trace.sites
        && let Some(offset) = key.checked_sub(sites.base).filter(|&o| o < sites.bytes.len() as u64)
    {
        return Location::Site { offset: offset as usize };
    }
    match trace.modules.iter().position(|m| m.contains(key)) {
        Some(index) => Location::Module { index, file_address: key.wrapping_sub(trace.modules[index].bias) },
        None => Location::Unmapped,
    }
}

/// The module whose address range holds `key` (a code address or a site descriptor), if any.
pub(crate) fn module_of<'t>(trace: &'t Trace<'_>, key: u64) -> Option<&'t ModuleEntry> {
    trace.modules.iter().find(|m| m.contains(key))
}

impl ModuleEntry {
    /// Whether `address` (a runtime address) lies in the module.
    pub fn contains(&self, address: u64) -> bool {
        self.start <= address && address < self.end
    }
}
