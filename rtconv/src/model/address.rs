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
    match module_index(trace, key) {
        Some(index) => Location::Module { index, file_address: key.wrapping_sub(trace.modules[index].bias) },
        None => Location::Unmapped,
    }
}

/// The index in `Trace::modules` of the module holding `key`: a binary
/// search of [`ModuleRanges`].
fn module_index(trace: &Trace, key: u64) -> Option<usize> {
    trace.module_ranges.find(key)
}

/// The modules' address ranges sorted by start, for lookups in O(log n)
/// however many modules a dump lists. Ranges do not overlap in a real
/// process; where a damaged or hostile dump's do, each range is cut at the
/// start of the next (an address then belongs to the later module).
#[derive(Debug, Default, Clone)]
pub struct ModuleRanges(Vec<ModuleRange>);

#[derive(Debug, Clone, Copy)]
struct ModuleRange {
    start: u64,
    end: u64,
    /// Index into `Trace::modules`.
    index: u32,
}

impl ModuleRanges {
    /// The ranges of `modules` (fewer than 2^32 of them: each takes bytes of the file).
    pub(super) fn new(modules: &[ModuleEntry]) -> Self {
        let mut ranges: Vec<ModuleRange> = modules
            .iter()
            .enumerate()
            .filter(|(_, m)| m.start < m.end)
            .map(|(index, m)| ModuleRange { start: m.start, end: m.end, index: index as u32 })
            .collect();
        ranges.sort_unstable_by_key(|r| (r.start, r.index));
        for i in 1..ranges.len() {
            let next_start = ranges[i].start;
            let previous = &mut ranges[i - 1];
            previous.end = previous.end.min(next_start);
        }
        ranges.retain(|r| r.start < r.end);
        ModuleRanges(ranges)
    }

    /// The index of the module whose range holds `address`.
    fn find(&self, address: u64) -> Option<usize> {
        let after = self.0.partition_point(|r| r.start <= address);
        let r = self.0.get(after.checked_sub(1)?)?;
        (address < r.end).then_some(r.index as usize)
    }
}

/// The module whose address range holds `key` (a code address or a site descriptor), if any.
pub(crate) fn module_of<'t>(trace: &'t Trace<'_>, key: u64) -> Option<&'t ModuleEntry> {
    trace.modules.get(module_index(trace, key)?)
}

impl ModuleEntry {
    /// Whether `address` (a runtime address) lies in the module.
    pub fn contains(&self, address: u64) -> bool {
        self.start <= address && address < self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(start: u64, end: u64) -> ModuleEntry {
        ModuleEntry { start, end, bias: 0, build_id: Vec::new(), path: "m".into(), is_main: false }
    }

    #[test]
    fn lookups_agree_with_a_scan_of_the_table() {
        // Disjoint ranges in a scrambled order, with gaps: the search finds what a scan finds.
        let mut modules: Vec<ModuleEntry> =
            (0..500u64).map(|i| module(i * 0x1000 + 0x100, i * 0x1000 + 0x900)).collect();
        modules.reverse();
        modules.swap(3, 400);
        let ranges = ModuleRanges::new(&modules);
        for address in (0..500 * 0x1000u64).step_by(0x80) {
            let scan = modules.iter().position(|m| m.contains(address));
            assert_eq!(ranges.find(address), scan, "{address:#x}");
        }
    }

    #[test]
    fn overlapping_ranges_are_cut_at_the_next_start() {
        // A [0x1000, 0x9000) holding B [0x2000, 0x3000); empty and inverted ranges ignored.
        let modules = [module(0x1000, 0x9000), module(0x2000, 0x3000), module(5, 5), module(9, 2)];
        let ranges = ModuleRanges::new(&modules);
        assert_eq!(ranges.find(0x1500), Some(0));
        assert_eq!(ranges.find(0x2500), Some(1));
        assert_eq!(ranges.find(0x4000), None, "A was cut at B's start");
        assert_eq!(ranges.find(5), None);
        assert_eq!(ranges.find(0), None);
    }
}
