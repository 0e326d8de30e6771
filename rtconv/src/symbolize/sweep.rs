//! Names for a batch of addresses from DWARF in one sweep over each
//! compilation unit they fall in: the answers `addr2line`'s `Context` gives
//! (the [`dwarf`](super::dwarf) backend's per-address lookups), for about
//! half the work.
//!
//! `addr2line` parses a unit's function list in one walk over its entries,
//! then walks each function an address falls in again for its inline tree,
//! resolving the name of every inlined call in it, and keeps every line row.
//! Here the addresses are known up front: one walk per unit lists the
//! functions (the same list, sorted the same way, so the same function is
//! chosen where ranges coincide) and reads the inline tree of each function
//! an address falls in as it passes; names are resolved only for the frames
//! that are printed, each entry once; files are rendered only when named.
//!
//! Out of scope, and left to `addr2line` (`None`): files that are not
//! linked ELF (relocatable objects, Mach-O, PE) and split DWARF (skeleton
//! units, whose `.dwo`/`.dwp` the `addr2line` loader finds).

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::path::Path;

use addr2line::gimli;
use gimli::AttributeValue;

use super::dwarf::NameCache;
use super::{BackendError, Frame, Source, SpanName};

type R<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;
type UnitOffset = gimli::UnitOffset<usize>;

/// Names `addresses` (file addresses, any order) from the DWARF in `debug`:
/// one entry per address; `None` when the file is out of scope (see the module docs).
pub fn resolve(
    debug: &Path,
    addresses: &[u64],
    code: Option<&[std::ops::Range<u64>]>,
    demangle: bool,
) -> Option<Result<Vec<Option<SpanName>>, BackendError>> {
    use object::{Object, ObjectSection};
    let failed = |reason: String| BackendError { backend: Source::Dwarf, path: debug.into(), reason };
    let bytes = match crate::model::map_file(debug, crate::model::Pages::OnDemand) {
        Ok(b) => b,
        Err(e) => return Some(Err(failed(e.to_string()))),
    };
    let file = object::File::parse(&*bytes).ok()?;
    if file.format() != object::BinaryFormat::Elf || file.kind() == object::ObjectKind::Relocatable {
        return None;
    }
    let endian = if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
    let load = |id: gimli::SectionId| -> Result<std::borrow::Cow<'_, [u8]>, gimli::Error> {
        let data = file.section_by_name(id.name()).and_then(|s| s.uncompressed_data().ok());
        Ok(data.unwrap_or(std::borrow::Cow::Borrowed(&[])))
    };
    let sections = match gimli::DwarfSections::load(load) {
        Ok(s) => s,
        Err(e) => return Some(Err(failed(e.to_string()))),
    };
    let mut dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
    let units = match Units::parse(&dwarf) {
        Ok(Some(units)) => units,
        Ok(None) => return None,
        Err(e) => return Some(Err(failed(e.to_string()))),
    };
    let symbols = file.symbol_map();
    let mut sweep = Sweep {
        dwarf: &dwarf,
        units: &units,
        names: FxHashMap::default(),
        entry_names: FxHashMap::default(),
        files: FxHashMap::default(),
        symbol_names: FxHashMap::default(),
        cache: NameCache::new(demangle),
        scratch: Scratch::default(),
    };
    // Each distinct address in code once, in order.
    let mut wanted: Vec<u64> = addresses
        .iter()
        .copied()
        .filter(|&a| a != u64::MAX && code.is_none_or(|code| code.iter().any(|r| r.contains(&a))))
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let found = sweep.find(&wanted);
    let mut named: Vec<Option<SpanName>> = wanted
        .iter()
        .zip(found)
        .map(|(&address, found)| {
            let symbol = symbols.containing(address).filter(|s| !super::is_local_label(s.name()));
            sweep.name(address, found, symbol.map(|s| (s.address(), s.name())))
        })
        .collect();
    // One answer per address asked: moved where it was asked once, cloned where more often.
    let mut uses = vec![0u32; wanted.len()];
    let index = |a: &u64| wanted.binary_search(a).ok();
    addresses.iter().filter_map(index).for_each(|i| uses[i] += 1);
    let answers = addresses
        .iter()
        .map(|a| {
            let i = index(a)?;
            uses[i] -= 1;
            if uses[i] == 0 { named[i].take() } else { named[i].clone() }
        })
        .collect();
    Some(Ok(answers))
}

/// One compilation unit.
struct UnitInfo<'a> {
    offset: usize,
    unit: gimli::Unit<R<'a>>,
    lang: Option<gimli::DwLang>,
}

/// An address range of a unit, as `addr2line` orders them.
struct UnitRange {
    unit: usize,
    min_begin: u64,
    range: gimli::Range,
}

/// Every unit, and the ranges that say which addresses each holds.
struct Units<'a> {
    units: Vec<UnitInfo<'a>>,
    ranges: Vec<UnitRange>,
}

/// A unit's low/high pc, size or range list.
#[derive(Default)]
struct RangeAttributes {
    low_pc: Option<u64>,
    high_pc: Option<u64>,
    size: Option<u64>,
    ranges_offset: Option<gimli::RangeListsOffset<usize>>,
}

impl RangeAttributes {
    /// Reads one attribute, if it is a range attribute.
    fn read<'a>(&mut self, unit: gimli::UnitRef<'_, R<'a>>, attr: &gimli::Attribute<R<'a>>) -> gimli::Result<bool> {
        match (attr.name(), attr.value()) {
            (gimli::DW_AT_low_pc, AttributeValue::Addr(v)) => self.low_pc = Some(v),
            (gimli::DW_AT_low_pc, AttributeValue::DebugAddrIndex(i)) => self.low_pc = Some(unit.address(i)?),
            (gimli::DW_AT_high_pc, AttributeValue::Addr(v)) => self.high_pc = Some(v),
            (gimli::DW_AT_high_pc, AttributeValue::DebugAddrIndex(i)) => self.high_pc = Some(unit.address(i)?),
            (gimli::DW_AT_high_pc, AttributeValue::Udata(v)) => self.size = Some(v),
            (gimli::DW_AT_ranges, value) => self.ranges_offset = unit.attr_ranges_offset(value)?,
            (gimli::DW_AT_low_pc | gimli::DW_AT_high_pc, _) => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Calls `f` with each non-empty range; whether there was one.
    fn for_each(&self, unit: gimli::UnitRef<'_, R<'_>>, mut f: impl FnMut(gimli::Range)) -> gimli::Result<bool> {
        let mut any = false;
        let mut add = |range: gimli::Range| {
            if range.begin < range.end {
                f(range);
                any = true;
            }
        };
        if let Some(offset) = self.ranges_offset {
            let mut list = unit.ranges(offset)?;
            while let Some(range) = list.next()? {
                add(range);
            }
        } else if let (Some(begin), Some(end)) = (self.low_pc, self.high_pc) {
            add(gimli::Range { begin, end });
        } else if let (Some(begin), Some(size)) = (self.low_pc, self.size) {
            add(gimli::Range { begin, end: begin.wrapping_add(size) });
        }
        Ok(any)
    }
}

impl<'a> Units<'a> {
    /// The units and their ranges, as `addr2line::Context` finds them
    /// (`DW_AT_ranges`, else `.debug_aranges`, else low/high pc, else the line
    /// table's sequences); `None` if a unit is a split DWARF skeleton.
    fn parse(dwarf: &gimli::Dwarf<R<'a>>) -> gimli::Result<Option<Units<'a>>> {
        let mut aranges = Vec::new();
        let mut headers = dwarf.debug_aranges.headers();
        while let Some(header) = headers.next()? {
            aranges.push((header.debug_info_offset().0, header.offset()));
        }
        aranges.sort_unstable_by_key(|i| i.0);
        let (mut units, mut ranges) = (Vec::new(), Vec::new());
        let mut headers = dwarf.units();
        while let Some(header) = headers.next()? {
            let id = units.len();
            let Some(offset) = header.debug_info_offset() else { continue };
            let mut need_range = match header.type_() {
                gimli::UnitType::Type { .. } | gimli::UnitType::SplitType { .. } => continue,
                gimli::UnitType::Partial => false,
                _ => true,
            };
            let Ok(unit) = dwarf.unit(header) else { continue };
            if unit.dwo_id.is_some() {
                return Ok(None);
            }
            let unit_ref = gimli::UnitRef::new(dwarf, &unit);
            let mut lang = None;
            if need_range {
                let mut entries = unit_ref.entries_raw(None)?;
                let Some(abbrev) = entries.read_abbreviation()? else { continue };
                let mut attrs = RangeAttributes::default();
                for spec in abbrev.attributes() {
                    let attr = entries.read_attribute(*spec)?;
                    if !attrs.read(unit_ref, &attr)?
                        && attr.name() == gimli::DW_AT_language
                        && let AttributeValue::Language(l) = attr.value()
                    {
                        lang = Some(l);
                    }
                }
                let first = match attrs.ranges_offset {
                    Some(_) => None,
                    None => aranges.binary_search_by_key(&offset.0, |x| x.0).ok(),
                };
                if let Some(mut i) = first {
                    while i > 0 && aranges[i - 1].0 == offset.0 {
                        i -= 1;
                    }
                    for (_, at) in aranges[i..].iter().take_while(|x| x.0 == offset.0) {
                        let mut entries = dwarf.debug_aranges.header(*at)?.entries();
                        while let Some(arange) = entries.next().transpose() {
                            let Ok(arange) = arange else { continue };
                            if arange.length() != 0 {
                                ranges.push(UnitRange { range: arange.range(), unit: id, min_begin: 0 });
                                need_range = false;
                            }
                        }
                    }
                }
                if need_range {
                    need_range = !attrs.for_each(unit_ref, |range| {
                        ranges.push(UnitRange { range, unit: id, min_begin: 0 });
                    })?;
                }
            }
            if need_range && let Ok(Some(lines)) = Lines::parse(unit_ref) {
                for s in &lines.sequences {
                    ranges.push(UnitRange {
                        range: gimli::Range { begin: s.start, end: s.end },
                        unit: id,
                        min_begin: 0,
                    });
                }
            }
            units.push(UnitInfo { offset: offset.0, unit, lang });
        }
        ranges.sort_unstable_by_key(|i| (i.range.end, i.unit));
        let mut min = !0;
        for r in ranges.iter_mut().rev() {
            min = min.min(r.range.begin);
            r.min_begin = min;
        }
        Ok(Some(Units { units, ranges }))
    }

    /// The units holding `probe`, in the order `addr2line` tries them.
    fn find(&self, probe: u64) -> impl Iterator<Item = usize> + '_ {
        let high = probe + 1;
        let pos = match self.ranges.binary_search_by_key(&probe, |i| i.range.end) {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        self.ranges[pos..]
            .iter()
            .take_while(move |i| high > i.min_begin)
            .filter(move |i| probe < i.range.end && high > i.range.begin)
            .map(|i| i.unit)
    }

    /// The unit holding the `.debug_info` offset `at`.
    fn containing(&self, at: usize) -> Option<usize> {
        match self.units.binary_search_by_key(&at, |u| u.offset) {
            Ok(_) | Err(0) => None,
            Err(i) => Some(i - 1),
        }
    }
}

/// A unit's line table: its sequences' rows, and its files as named.
struct Lines {
    sequences: Vec<Sequence>,
    rows: Vec<Row>,
}

struct Sequence {
    start: u64,
    end: u64,
    rows: std::ops::Range<usize>,
}

#[derive(Clone, Copy)]
struct Row {
    address: u64,
    file: u64,
    line: u32,
}

impl Lines {
    fn parse(unit: gimli::UnitRef<'_, R<'_>>) -> gimli::Result<Option<Lines>> {
        let mut lines = Lines { sequences: Vec::new(), rows: Vec::new() };
        Ok(lines.parse_into(unit)?.then_some(lines))
    }

    /// Reads `unit`'s line table into `self` (its buffers reused); whether it has one.
    fn parse_into(&mut self, unit: gimli::UnitRef<'_, R<'_>>) -> gimli::Result<bool> {
        let Some(program) = unit.line_program.clone() else { return Ok(false) };
        let (sequences, all) = (&mut self.sequences, &mut self.rows);
        sequences.clear();
        all.clear();
        let mut first = 0;
        let mut rows = program.rows();
        while let Some((_, row)) = rows.next_row()? {
            if row.end_sequence() {
                if let Some(start) = all.get(first).map(|r: &Row| r.address) {
                    let end = row.address();
                    if start < end {
                        sequences.push(Sequence { start, end, rows: first..all.len() });
                    } else {
                        all.truncate(first);
                    }
                }
                first = all.len();
                continue;
            }
            let (address, file) = (row.address(), row.file_index());
            let line = row.line().map_or(0, std::num::NonZeroU64::get) as u32;
            if all.len() > first
                && let Some(last) = all.last_mut()
                && last.address == address
            {
                (last.file, last.line) = (file, line);
                continue;
            }
            all.push(Row { address, file, line });
        }
        sequences.sort_unstable_by_key(|s| s.start);
        Ok(true)
    }

    /// The row whose range holds `probe` (as `addr2line` finds it).
    fn find(&self, probe: u64) -> Option<Row> {
        let s = self
            .sequences
            .binary_search_by(|s| {
                if probe < s.start {
                    std::cmp::Ordering::Greater
                } else if probe >= s.end {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .ok()?;
        let rows = &self.rows[self.sequences[s].rows.clone()];
        let i = match rows.binary_search_by(|r| r.address.cmp(&probe)) {
            Ok(i) => i,
            Err(0) => return None,
            Err(i) => i - 1,
        };
        Some(rows[i])
    }
}

/// A unit's file names, rendered as `addr2line` renders them, on first use.
struct Files {
    rendered: HashMap<u64, Option<String>>,
}

impl Files {
    fn get(&mut self, unit: gimli::UnitRef<'_, R<'_>>, index: u64) -> Option<String> {
        self.rendered
            .entry(index)
            .or_insert_with(|| {
                let header = unit.line_program.as_ref()?.header();
                match header.file(index) {
                    Some(file) => render_file(unit, file, header).ok(),
                    None if index == 0 => Some(String::new()),
                    None => None,
                }
            })
            .clone()
    }
}

fn render_file<'a>(
    unit: gimli::UnitRef<'_, R<'a>>,
    file: &gimli::FileEntry<R<'a>>,
    header: &gimli::LineProgramHeader<R<'a>>,
) -> gimli::Result<String> {
    let mut path = match unit.comp_dir {
        Some(dir) => gimli::Reader::to_string_lossy(&dir)?.into_owned(),
        None => String::new(),
    };
    if file.directory_index() != 0
        && let Some(directory) = file.directory(header)
    {
        path_push(&mut path, &gimli::Reader::to_string_lossy(&unit.attr_string(directory)?)?);
    }
    path_push(&mut path, &gimli::Reader::to_string_lossy(&unit.attr_string(file.path_name())?)?);
    Ok(path)
}

fn path_push(path: &mut String, p: &str) {
    let forward_root = |p: &str| p.starts_with('/') || p.get(1..3) == Some(":/");
    let backward_root = |p: &str| p.starts_with('\\') || p.get(1..3) == Some(":\\");
    if forward_root(p) || backward_root(p) {
        *path = p.to_string();
    } else {
        let separator = if backward_root(path) { '\\' } else { '/' };
        if !path.is_empty() && !path.ends_with(separator) {
            path.push(separator);
        }
        *path += p;
    }
}

/// An inlined call within a function.
#[derive(Clone, Copy)]
struct Inlined {
    offset: UnitOffset,
    call_file: Option<u64>,
    call_line: u32,
}

/// The inline tree of a function an address falls in.
#[derive(Default)]
struct InlineTree {
    calls: Vec<Inlined>,
    /// (call depth, range, index into `calls`), by depth then range start.
    ranges: Vec<(usize, gimli::Range, usize)>,
}

impl InlineTree {
    /// The inlined calls holding `probe`, outermost first (as `addr2line` searches them).
    fn find(&self, probe: u64) -> Vec<usize> {
        let mut found = Vec::new();
        let mut ranges = &self.ranges[..];
        loop {
            let depth = found.len();
            let search = ranges.binary_search_by(|(d, range, _)| {
                use std::cmp::Ordering::*;
                if *d > depth {
                    Greater
                } else if *d < depth {
                    Less
                } else if range.begin > probe {
                    Greater
                } else if range.end <= probe {
                    Less
                } else {
                    Equal
                }
            });
            let Ok(i) = search else { return found };
            found.push(ranges[i].2);
            ranges = &ranges[i + 1..];
        }
    }
}

/// What an address was found in: its unit, function and inlined calls
/// (outermost first), and line row.
#[derive(Default)]
struct Found {
    unit: usize,
    function: Option<UnitOffset>,
    inlined: Vec<Inlined>,
    row: Option<Row>,
}

/// Buffers one unit's sweep fills, kept for the next unit's.
#[derive(Default)]
struct Scratch {
    functions: Vec<UnitOffset>,
    addresses: Vec<(gimli::Range, usize)>,
    /// Inline trees in use, and spare ones.
    trees: Vec<InlineTree>,
    spare: Vec<InlineTree>,
    /// Function index to its tree in `trees`.
    tree_of: FxHashMap<usize, usize>,
    open: Vec<(isize, Option<usize>, usize)>,
    own_ranges: Vec<gimli::Range>,
    lines: Option<Lines>,
}

struct Sweep<'d, 'a> {
    dwarf: &'d gimli::Dwarf<R<'a>>,
    units: &'d Units<'a>,
    /// Names of entries reached through `DW_AT_abstract_origin`/`DW_AT_specification`.
    names: FxHashMap<(usize, UnitOffset), Option<R<'a>>>,
    /// Functions' and inlined calls' names as shown (their own rule, see [`Sweep::entry_name`]).
    entry_names: FxHashMap<(usize, UnitOffset), Option<Box<str>>>,
    /// Each unit's files, as far as named.
    files: FxHashMap<usize, Files>,
    /// Symbols' names as shown, by symbol address.
    symbol_names: FxHashMap<u64, Box<str>>,
    /// Raw names to shown names (names recur under many entries).
    cache: NameCache,
    scratch: Scratch,
}

impl<'d, 'a> Sweep<'d, 'a> {
    fn unit_ref(&self, unit: usize) -> gimli::UnitRef<'d, R<'a>> {
        gimli::UnitRef::new(self.dwarf, &self.units.units[unit].unit)
    }

    /// Finds every address (sorted, distinct): per address, what holds it.
    fn find(&mut self, addresses: &[u64]) -> Vec<Option<Found>> {
        let mut out: Vec<Option<Found>> = (0..addresses.len()).map(|_| None).collect();
        // Which unit each address is tried in next (its n-th candidate).
        let mut tried = vec![0usize; addresses.len()];
        let mut pending: Vec<usize> = (0..addresses.len()).collect();
        while !pending.is_empty() {
            let mut by_unit: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
            for &i in &pending {
                if let Some(unit) = self.units.find(addresses[i]).nth(tried[i]) {
                    by_unit.entry(unit).or_default().push(i);
                }
            }
            let mut next = Vec::new();
            for (unit, indices) in by_unit {
                let probes: Vec<u64> = indices.iter().map(|&i| addresses[i]).collect();
                // A unit that does not parse answers nothing for its addresses (as addr2line's lookup fails).
                let Ok(found) = self.sweep_unit(unit, &probes) else { continue };
                for (i, f) in indices.into_iter().zip(found) {
                    match f {
                        Some(f) => out[i] = Some(f),
                        None => {
                            tried[i] += 1;
                            next.push(i);
                        }
                    }
                }
            }
            pending = next;
        }
        out
    }

    /// One walk over `unit`'s entries for `probes` (sorted): per probe, its
    /// function and inline chain, and its line row; `None` where the unit has neither.
    fn sweep_unit(&mut self, unit: usize, probes: &[u64]) -> gimli::Result<Vec<Option<Found>>> {
        let unit_ref = self.unit_ref(unit);
        let touches = |ranges: &[gimli::Range]| {
            ranges.iter().any(|r| {
                let i = probes.partition_point(|&p| p < r.begin);
                probes.get(i).is_some_and(|&p| p < r.end)
            })
        };
        let Scratch { functions, addresses, trees, spare, tree_of, open, own_ranges, lines } = &mut self.scratch;
        // Every function with an address range: (range, function) as addr2line lists them.
        functions.clear();
        addresses.clear();
        spare.extend(trees.drain(..).map(|mut t| {
            t.calls.clear();
            t.ranges.clear();
            t
        }));
        tree_of.clear();
        // Open entries: (depth, the tree of the function they are in, inlined call depth).
        open.clear();
        let mut entries = unit_ref.entries_raw(None)?;
        while !entries.is_empty() {
            let offset = entries.next_offset();
            let depth = entries.next_depth();
            while open.last().is_some_and(|o| depth <= o.0) {
                open.pop();
            }
            let Some(abbrev) = entries.read_abbreviation()? else { continue };
            match abbrev.tag() {
                gimli::DW_TAG_subprogram => {
                    let mut attrs = RangeAttributes::default();
                    for spec in abbrev.attributes() {
                        let attr = entries.read_attribute(*spec)?;
                        attrs.read(unit_ref, &attr)?;
                    }
                    let index = functions.len();
                    own_ranges.clear();
                    let has = attrs.for_each(unit_ref, |range| {
                        addresses.push((range, index));
                        own_ranges.push(range);
                    })?;
                    let mut tree = None;
                    if has {
                        functions.push(offset);
                        if touches(own_ranges) {
                            tree = Some(trees.len());
                            tree_of.insert(index, trees.len());
                            trees.push(spare.pop().unwrap_or_default());
                        }
                    }
                    // A nested function's subtree is its own, never its parent's inline tree.
                    open.push((depth, tree, 0));
                }
                gimli::DW_TAG_inlined_subroutine if open.last().is_some_and(|o| o.1.is_some()) => {
                    let &(_, Some(tree), call_depth) = open.last().unwrap_or(&(0, None, 0)) else { continue };
                    let mut attrs = RangeAttributes::default();
                    let (mut call_file, mut call_line) = (None, 0);
                    for spec in abbrev.attributes() {
                        let attr = entries.read_attribute(*spec)?;
                        if attrs.read(unit_ref, &attr)? {
                            continue;
                        }
                        match attr.name() {
                            gimli::DW_AT_call_file => {
                                if let AttributeValue::FileIndex(fi) = attr.value()
                                    && (fi > 0 || unit_ref.header.version() >= 5)
                                {
                                    call_file = Some(fi);
                                }
                            }
                            gimli::DW_AT_call_line => call_line = attr.udata_value().unwrap_or(0) as u32,
                            _ => {}
                        }
                    }
                    let tree = &mut trees[tree];
                    let call = tree.calls.len();
                    tree.calls.push(Inlined { offset, call_file, call_line });
                    attrs.for_each(unit_ref, |range| tree.ranges.push((call_depth, range, call)))?;
                    open.push((depth, open.last().and_then(|o| o.1), call_depth + 1));
                }
                _ => entries.skip_attributes(abbrev.attributes())?,
            }
        }
        addresses.sort_unstable_by_key(|a| a.0.begin);
        for tree in trees.iter_mut() {
            tree.ranges.sort_unstable_by_key(|r| (r.0, r.1.begin));
        }
        let lines = lines.get_or_insert_with(|| Lines { sequences: Vec::new(), rows: Vec::new() });
        let has_lines = lines.parse_into(unit_ref).unwrap_or(false);
        let mut out = Vec::with_capacity(probes.len());
        for &probe in probes {
            let function = addresses
                .binary_search_by(|(range, _)| {
                    if probe < range.begin {
                        std::cmp::Ordering::Greater
                    } else if probe >= range.end {
                        std::cmp::Ordering::Less
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .ok()
                .map(|i| addresses[i].1);
            let row = if has_lines { lines.find(probe) } else { None };
            out.push(match function {
                Some(f) => {
                    let inlined = match tree_of.get(&f) {
                        Some(&t) => trees[t].find(probe).into_iter().map(|c| trees[t].calls[c]).collect(),
                        None => Vec::new(),
                    };
                    Some(Found { unit, function: Some(functions[f]), inlined, row })
                }
                None if row.is_some() => Some(Found { unit, row, ..Found::default() }),
                None => None,
            });
        }
        Ok(out)
    }

    /// A function's or inlined call's name, by `addr2line`'s rule: its
    /// linkage name, else its name, else (when met before either) the name
    /// of the entry its abstract origin or specification names.
    /// As shown (demangled by the unit's language when asked), `None` if it has none.
    fn entry_name(&mut self, unit: usize, offset: UnitOffset) -> Option<String> {
        if let Some(name) = self.entry_names.get(&(unit, offset)) {
            return name.as_deref().map(str::to_owned);
        }
        let raw = self.read_entry_name(unit, offset);
        let lang = self.units.units[unit].lang.map(|l| l.0);
        let name = raw.as_ref().and_then(|n| gimli::Reader::to_string_lossy(n).ok()).map(|n| self.cache.name(&n, lang));
        self.entry_names.insert((unit, offset), name.as_deref().map(Into::into));
        name
    }

    /// A symbol's name as shown.
    fn symbol_name(&mut self, (address, raw): (u64, &str)) -> String {
        if let Some(name) = self.symbol_names.get(&address) {
            return name.to_string();
        }
        let name = self.cache.name(raw, None);
        self.symbol_names.insert(address, name.as_str().into());
        name
    }

    fn read_entry_name(&mut self, unit: usize, offset: UnitOffset) -> Option<R<'a>> {
        let unit_ref = self.unit_ref(unit);
        let mut entries = unit_ref.entries_raw(Some(offset)).ok()?;
        let abbrev = entries.read_abbreviation().ok()??;
        let mut name = None;
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec).ok()?;
            match attr.name() {
                gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                    if let Ok(v) = unit_ref.attr_string(attr.value()) {
                        name = Some(v);
                    }
                }
                gimli::DW_AT_name if name.is_none() => name = unit_ref.attr_string(attr.value()).ok(),
                gimli::DW_AT_abstract_origin | gimli::DW_AT_specification if name.is_none() => {
                    name = self.referenced_name(unit, attr.value(), 16);
                }
                _ => {}
            }
        }
        name
    }

    /// The name of the entry `value` refers to (`addr2line`'s `name_attr`).
    fn referenced_name(&mut self, unit: usize, value: AttributeValue<R<'a>>, limit: usize) -> Option<R<'a>> {
        if limit == 0 {
            return None;
        }
        let (unit, offset) = match value {
            AttributeValue::UnitRef(offset) => (unit, offset),
            AttributeValue::DebugInfoRef(at) => {
                let unit = self.units.containing(at.0)?;
                let offset = at.to_unit_offset(&self.units.units[unit].unit.header)?;
                (unit, offset)
            }
            _ => return None,
        };
        if let Some(name) = self.names.get(&(unit, offset)) {
            return *name;
        }
        let name = self.referenced_entry_name(unit, offset, limit);
        self.names.insert((unit, offset), name);
        name
    }

    /// `addr2line`'s `name_entry`: linkage name, else name, else follow the reference.
    fn referenced_entry_name(&mut self, unit: usize, offset: UnitOffset, limit: usize) -> Option<R<'a>> {
        let unit_ref = self.unit_ref(unit);
        let mut entries = unit_ref.entries_raw(Some(offset)).ok()?;
        let abbrev = entries.read_abbreviation().ok()??;
        let (mut name, mut next) = (None, None);
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec).ok()?;
            match attr.name() {
                gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                    if let Ok(v) = unit_ref.attr_string(attr.value()) {
                        return Some(v);
                    }
                }
                gimli::DW_AT_name => {
                    if let Ok(v) = unit_ref.attr_string(attr.value()) {
                        name = Some(v);
                    }
                }
                gimli::DW_AT_abstract_origin | gimli::DW_AT_specification => next = Some(attr.value()),
                _ => {}
            }
        }
        if name.is_some() {
            return name;
        }
        self.referenced_name(unit, next?, limit - 1)
    }

    /// The answer for one address, as the `dwarf` backend's `Worker::lookup` gives it.
    fn name(&mut self, address: u64, found: Option<Found>, symbol: Option<(u64, &str)>) -> Option<SpanName> {
        let found = found?;
        let Some(function) = found.function else {
            // A line row but no function: the symbol's name with the row's place.
            return self.line_only(address, symbol);
        };
        let unit_ref = self.unit_ref(found.unit);
        let mut files = self.files.remove(&found.unit).unwrap_or_else(|| Files { rendered: HashMap::new() });
        let mut file_of = |index: u64| files.get(unit_ref, index);
        // Frames innermost first: each inlined call, then the function.
        let mut chain: Vec<Frame> = Vec::new();
        let (mut file, mut line) = match found.row {
            Some(row) => (file_of(row.file), (row.line != 0).then_some(row.line)),
            None => (None, None),
        };
        let mut innermost_named = true;
        for (k, call) in found.inlined.iter().rev().enumerate() {
            let name = self.entry_name(found.unit, call.offset);
            if k == 0 {
                innermost_named = name.is_some();
            }
            chain.push(Frame { function: name.unwrap_or_else(|| "??".into()), file: file.take(), line });
            file = call.call_file.and_then(&mut file_of);
            line = (call.call_line != 0).then_some(call.call_line);
        }
        let name = self.entry_name(found.unit, function);
        if chain.is_empty() {
            innermost_named = name.is_some();
        }
        chain.push(Frame { function: name.unwrap_or_else(|| "??".into()), file, line });
        self.files.insert(found.unit, files);
        if !innermost_named {
            return self.line_only(address, symbol);
        }
        if let Some(symbol) = symbol
            && let Some(outermost) = chain.last_mut()
        {
            outermost.function = self.symbol_name(symbol);
        }
        let innermost = chain.remove(0);
        Some(SpanName {
            name: innermost.function,
            file: innermost.file,
            line: innermost.line,
            source: Source::Dwarf,
            inlined_into: chain,
        })
    }

    /// Line info without a named function (code from a crate built with line
    /// tables only): the first unit's row for the address, and the symbol's name.
    fn line_only(&mut self, address: u64, symbol: Option<(u64, &str)>) -> Option<SpanName> {
        let units: Vec<usize> = self.units.find(address).collect();
        let (unit, row) = units.into_iter().find_map(|u| {
            let lines = Lines::parse(self.unit_ref(u)).ok()??;
            Some((u, lines.find(address)?))
        })?;
        let name = self.symbol_name(symbol?);
        let mut files = Files { rendered: HashMap::new() };
        let file = files.get(self.unit_ref(unit), row.file);
        Some(SpanName {
            name,
            file,
            line: (row.line != 0).then_some(row.line),
            source: Source::Dwarf,
            inlined_into: Vec::new(),
        })
    }
}
