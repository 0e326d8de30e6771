//! Names for a batch of addresses from DWARF in one sweep over each
//! compilation unit they fall in: the answers `addr2line`'s `Context` gives
//! (the [`dwarf`](super::dwarf) backend's per-address lookups), in far fewer
//! instructions than the addr2line crate's own CLI takes (docs/PERFORMANCE.md).
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

mod line_program;
mod lines;
mod naming;
mod plans;
mod units;

use std::path::Path;

use addr2line::gimli;
use gimli::AttributeValue;
use rustc_hash::FxHashMap;

use super::BackendError;
use super::dwarf_common::NameCache;
use crate::model::{Frame, Source, SpanName};
use lines::{Lines, Row};
use naming::Naming;
use plans::{Field, FieldStep, Kind, Plans};
use units::{RangeAttributes, Units};

type R<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

type UnitOffset = gimli::UnitOffset<usize>;

/// Names `addresses` (file addresses, any order) from the DWARF in `debug`:
/// one entry per address; `None` when the file is out of scope (see the module docs).
pub fn resolve(debug: &Path, addresses: &[u64], demangle: bool) -> Option<Result<Vec<Option<SpanName>>, BackendError>> {
    use object::{Object, ObjectSection};
    let failed = |reason: String| BackendError { backend: Source::Dwarf, path: debug.into(), reason };
    let bytes = match crate::io::map_file(debug, crate::io::Pages::OnDemand) {
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
    // Addresses outside the file's code are none of its functions (see `dwarf_common::code_ranges`).
    let code = super::dwarf_common::code_ranges_of(&file);
    // Each distinct address in code once, in order.
    let mut wanted: Vec<u64> = addresses
        .iter()
        .copied()
        .filter(|&a| a != u64::MAX && code.as_deref().is_none_or(|code| code.iter().any(|r| r.contains(&a))))
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    // One share of the addresses per core, whole units each (a unit is walked by one
    // thread), the largest first to the least loaded; each swept on its own thread with
    // its own caches (the units, the sections and the symbols are shared).
    let name_all = |part: &[u64]| -> Vec<Option<SpanName>> {
        let mut sweep = Sweep::new(&dwarf, &units, demangle);
        let found = sweep.find(part);
        part.iter()
            .zip(found)
            .map(|(&address, found)| {
                let symbol = symbols.containing(address).filter(|s| !super::is_local_label(s.name()));
                sweep.name(address, found, symbol.map(|s| (s.address(), s.name())))
            })
            .collect()
    };
    let threads = rayon::current_num_threads().min(wanted.len() / super::dwarf_common::MIN_PER_WORKER).max(1);
    let mut named: Vec<Option<SpanName>> = if threads == 1 {
        name_all(&wanted)
    } else {
        let mut by_unit: FxHashMap<Option<usize>, Vec<usize>> = FxHashMap::default();
        for (i, &a) in wanted.iter().enumerate() {
            by_unit.entry(units.find(a).next()).or_default().push(i);
        }
        let mut groups: Vec<Vec<usize>> = by_unit.into_values().collect();
        groups.sort_unstable_by_key(|g| std::cmp::Reverse(g.len()));
        let mut shares: Vec<Vec<usize>> = vec![Vec::new(); threads];
        for group in groups {
            if let Some(least) = shares.iter_mut().min_by_key(|s| s.len()) {
                least.extend(group);
            }
        }
        let mut named = vec![None; wanted.len()];
        std::thread::scope(|scope| {
            let running: Vec<_> = shares
                .into_iter()
                .map(|mut share| {
                    share.sort_unstable();
                    let part: Vec<u64> = share.iter().map(|&i| wanted[i]).collect();
                    (share, scope.spawn(move || name_all(&part)))
                })
                .collect();
            for (share, thread) in running {
                let names = thread.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
                for (i, name) in share.into_iter().zip(names) {
                    named[i] = name;
                }
            }
        });
        named
    };
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

/// Where the range `begin..end` lies from `probe`, for a binary search of ranges by address
/// (`Equal`: it holds the probe).
fn place(begin: u64, end: u64, probe: u64) -> std::cmp::Ordering {
    if probe < begin {
        std::cmp::Ordering::Greater
    } else if probe >= end {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Equal
    }
}

/// An inlined call within a function.
#[derive(Clone, Copy)]
struct Inlined {
    /// Its name as shown ([`Naming::shown`]), when an address falls in it.
    name: Option<u32>,
    call_file: Option<u64>,
    call_line: u32,
    call_column: u32,
}

/// The inline tree of a function an address falls in.
#[derive(Default)]
struct InlineTree {
    /// The addresses (indices into the sweep's) within the function's span.
    probes: std::ops::Range<usize>,
    calls: Vec<Inlined>,
    /// (call depth, range, index into `calls`), by depth then range start.
    ranges: Vec<(usize, gimli::Range, usize)>,
}

impl InlineTree {
    /// The inlined calls holding `probe`, outermost first (as `addr2line` searches them).
    fn find(&self, probe: u64) -> Vec<Inlined> {
        let mut found = Vec::new();
        let mut ranges = &self.ranges[..];
        loop {
            let depth = found.len();
            let search =
                ranges.binary_search_by(|(d, range, _)| d.cmp(&depth).then(place(range.begin, range.end, probe)));
            let Ok(i) = search else { return found };
            found.push(self.calls[ranges[i].2]);
            ranges = &ranges[i + 1..];
        }
    }
}

/// What an address was found in: its unit, function (and its name) and
/// inlined calls (outermost first), and line row.
#[derive(Default)]
struct Found<'a> {
    unit: usize,
    /// The function, and its raw name.
    function: Option<Option<R<'a>>>,
    inlined: Vec<Inlined>,
    row: Option<Row>,
}

/// Buffers one unit's sweep fills, kept for the next unit's.
#[derive(Default)]
struct Scratch<'a> {
    /// Each function's raw name, when an address falls in it.
    functions: Vec<Option<R<'a>>>,
    addresses: Vec<(gimli::Range, usize)>,
    /// Inline trees in use, and spare ones.
    trees: Vec<InlineTree>,
    spare: Vec<InlineTree>,
    /// Function index to its tree in `trees`.
    tree_of: FxHashMap<usize, usize>,
    open: Vec<(isize, Option<usize>, usize)>,
    own_ranges: Vec<gimli::Range>,
    /// The entry's name attributes, in order.
    name_attrs: Vec<(gimli::DwAt, AttributeValue<R<'a>>)>,
    lines: Option<Lines>,
    plans: Plans,
}

struct Sweep<'d, 'a> {
    dwarf: &'d gimli::Dwarf<R<'a>>,
    units: &'d Units<'a>,
    naming: Naming<'d, 'a>,
    scratch: Scratch<'a>,
}

impl<'d, 'a> Sweep<'d, 'a> {
    fn new(dwarf: &'d gimli::Dwarf<R<'a>>, units: &'d Units<'a>, demangle: bool) -> Self {
        let naming = Naming {
            dwarf,
            units,
            referenced: FxHashMap::default(),
            shown: Vec::new(),
            ids: FxHashMap::default(),
            files: FxHashMap::default(),
            file_names: Vec::new(),
            symbols: FxHashMap::default(),
            cache: NameCache::new(demangle),
        };
        Sweep { dwarf, units, naming, scratch: Scratch::default() }
    }

    fn unit_ref(&self, unit: usize) -> gimli::UnitRef<'d, R<'a>> {
        gimli::UnitRef::new(self.dwarf, &self.units.units[unit].unit)
    }

    /// Finds every address (sorted, distinct): per address, what holds it.
    fn find(&mut self, addresses: &[u64]) -> Vec<Option<Found<'a>>> {
        let mut out: Vec<Option<Found<'a>>> = (0..addresses.len()).map(|_| None).collect();
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
    fn sweep_unit(&mut self, unit: usize, probes: &[u64]) -> gimli::Result<Vec<Option<Found<'a>>>> {
        let unit_ref = self.unit_ref(unit);
        // Whether an address of `probes` (sorted) falls in one of `ranges`.
        let touches = |probes: &[u64], ranges: &[gimli::Range]| {
            ranges.iter().any(|r| {
                let i = probes.partition_point(|&p| p < r.begin);
                probes.get(i).is_some_and(|&p| p < r.end)
            })
        };
        let naming = &mut self.naming;
        let Scratch { functions, addresses, trees, spare, tree_of, open, own_ranges, name_attrs, lines, plans } =
            &mut self.scratch;
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
        plans.clear();
        let header = &unit_ref.header;
        let first = gimli::UnitOffset(header.header_size());
        let mut input = header.range_from(first..)?;
        let total = input.len();
        let mut next_depth: isize = 0;
        while !input.is_empty() {
            let at = input;
            let depth = next_depth;
            while open.last().is_some_and(|o| depth <= o.0) {
                open.pop();
            }
            let code = gimli::Reader::read_uleb128(&mut input)?;
            if code == 0 {
                next_depth -= 1;
                continue;
            }
            let plan = plans.plan(code, header, &unit_ref.abbreviations)?;
            if plan.has_children {
                next_depth += 1;
            }
            // Read: functions with code, and inlined calls in the tree of a function an address falls in.
            let in_tree = match plan.kind {
                Kind::Function => None,
                Kind::Inlined => match open.last().and_then(|o| o.1.map(|tree| (tree, o.2))) {
                    Some(in_tree) => Some(in_tree),
                    None => {
                        plans.skip(&mut input, header, plan)?;
                        continue;
                    }
                },
                Kind::Declaration | Kind::Other => {
                    if plan.kind == Kind::Declaration {
                        // Its subtree is its own, never the inline tree of a function around it.
                        open.push((depth, None, 0));
                    }
                    plans.skip(&mut input, header, plan)?;
                    continue;
                }
            };
            let mut attrs = RangeAttributes::default();
            let (mut call_file, mut call_line, mut call_column) = (None, 0, 0);
            name_attrs.clear();
            let mut take = |field: Field, value: AttributeValue<R<'a>>| -> gimli::Result<()> {
                match field {
                    Field::Range(at) => attrs.set(unit_ref, at, value)?,
                    Field::Name(at) => name_attrs.push((at, value)),
                    Field::CallFile => {
                        if let AttributeValue::FileIndex(fi) = value
                            && (fi > 0 || header.version() >= 5)
                        {
                            call_file = Some(fi);
                        }
                    }
                    Field::CallLine => call_line = value.udata_value().unwrap_or(0) as u32,
                    Field::CallColumn => call_column = value.udata_value().unwrap_or(0) as u32,
                }
                Ok(())
            };
            if let Some(steps) = plans.fields(plan) {
                for &step in steps {
                    match step {
                        FieldStep::Skip(n) => gimli::Reader::skip(&mut input, n)?,
                        FieldStep::Read(field, form) => take(field, plans::value(&mut input, field, form, header)?)?,
                    }
                }
            } else {
                let offset = gimli::UnitOffset(first.0 + total - at.len());
                let abbrev = unit_ref.abbreviations.get(code).ok_or(gimli::Error::InvalidAbbreviationCode(code))?;
                let mut entries = unit_ref.entries_raw(Some(offset))?;
                entries.read_abbreviation()?;
                for spec in abbrev.attributes() {
                    let attr = entries.read_attribute_inline(*spec)?;
                    if let Some(field) = Field::of(attr.name()) {
                        take(field, attr.value())?;
                    }
                }
                input = header.range_from(entries.next_offset()..)?;
            }
            own_ranges.clear();
            if plan.kind == Kind::Function {
                let index = functions.len();
                let has = attrs.for_each(unit_ref, |range| {
                    addresses.push((range, index));
                    own_ranges.push(range);
                })?;
                let mut tree = None;
                if has {
                    let touched = touches(probes, own_ranges);
                    functions.push(if touched { naming.entry_raw(unit, name_attrs) } else { None });
                    if touched {
                        tree = Some(trees.len());
                        tree_of.insert(index, trees.len());
                        let mut new = spare.pop().unwrap_or_default();
                        // Its inlined calls can hold only the addresses within its span.
                        let (low, high) =
                            own_ranges.iter().fold((u64::MAX, 0), |(l, h), r| (l.min(r.begin), h.max(r.end)));
                        new.probes = probes.partition_point(|&p| p < low)..probes.partition_point(|&p| p < high);
                        trees.push(new);
                    }
                }
                // A nested function's subtree is its own, never its parent's inline tree.
                open.push((depth, tree, 0));
            } else if let Some((tree, call_depth)) = in_tree {
                let call = trees[tree].calls.len();
                attrs.for_each(unit_ref, |range| own_ranges.push(range))?;
                // A call no address falls in is never found, nor are the calls inlined into it
                // (their code is within its own): its ranges are not kept and its subtree is
                // stepped over.
                let touched = touches(&probes[trees[tree].probes.clone()], own_ranges);
                let name = if touched {
                    trees[tree].ranges.extend(own_ranges.iter().map(|&range| (call_depth, range, call)));
                    naming.entry(unit, name_attrs)
                } else {
                    None
                };
                trees[tree].calls.push(Inlined { name, call_file, call_line, call_column });
                open.push((depth, touched.then_some(tree), call_depth + 1));
            }
        }
        addresses.sort_unstable_by_key(|a| a.0.begin);
        for tree in trees.iter_mut() {
            tree.ranges.sort_unstable_by_key(|r| (r.0, r.1.begin));
        }
        let lines = lines.get_or_insert_with(Lines::default);
        let has_lines = lines.parse_into(unit_ref).unwrap_or(false);
        let mut out = Vec::with_capacity(probes.len());
        for &probe in probes {
            let function = addresses
                .binary_search_by(|(range, _)| place(range.begin, range.end, probe))
                .ok()
                .map(|i| addresses[i].1);
            let row = if has_lines { lines.find(probe) } else { None };
            out.push(match function {
                Some(f) => {
                    let inlined = tree_of.get(&f).map(|&t| trees[t].find(probe)).unwrap_or_default();
                    Some(Found { unit, function: Some(functions[f]), inlined, row })
                }
                None if row.is_some() => Some(Found { unit, row, ..Found::default() }),
                None => None,
            });
        }
        Ok(out)
    }

    /// The answer for one address, as the `dwarf` backend's `Worker::lookup` gives it.
    fn name(&mut self, address: u64, found: Option<Found<'a>>, symbol: Option<(u64, &str)>) -> Option<SpanName> {
        let found = found?;
        let Some(function) = found.function else {
            // A line row but no function: the symbol's name with the row's place.
            return self.line_only(address, symbol);
        };
        let naming = &mut self.naming;
        let shown = |naming: &Naming<'_, '_>, id: Option<u32>| match id {
            Some(id) => naming.shown[id as usize].to_string(),
            None => "??".to_string(),
        };
        // Frames innermost first: each inlined call, then the function.
        let innermost_named = found.inlined.last().map_or(function.is_some(), |call| call.name.is_some());
        if !innermost_named {
            return self.line_only(address, symbol);
        }
        let mut chain: Vec<Frame> = Vec::with_capacity(found.inlined.len() + 1);
        // As the addr2line crate: a row's column wherever it has a line (0, the left edge,
        // included), a call's where it is not 0.
        let nonzero = |n: u32| (n != 0).then_some(n);
        let (mut file, mut line, mut column) = match found.row {
            Some(row) => (naming.file(found.unit, row.file), nonzero(row.line), nonzero(row.line).map(|_| row.column)),
            None => (None, None, None),
        };
        for call in found.inlined.iter().rev() {
            chain.push(Frame { function: shown(naming, call.name), file: file.take(), line, column });
            file = call.call_file.and_then(|f| naming.file(found.unit, f));
            (line, column) = (nonzero(call.call_line), nonzero(call.call_column));
        }
        // The function is named by its symbol where it has one (its DWARF name is then not shown).
        let outermost = match (symbol, function) {
            (Some(symbol), _) => naming.symbol(symbol),
            (None, Some(raw)) => {
                let lang = self.units.units[found.unit].lang.map(|l| l.0);
                let id = naming.shown_id(raw, lang);
                shown(naming, Some(id))
            }
            (None, None) => shown(naming, None),
        };
        chain.push(Frame { function: outermost, file, line, column });
        SpanName::from_chain(chain, Source::Dwarf)
    }

    /// Line info without a named function (code from a crate built with line
    /// tables only): the first unit's row for the address, and the symbol's name.
    fn line_only(&mut self, address: u64, symbol: Option<(u64, &str)>) -> Option<SpanName> {
        let units: Vec<usize> = self.units.find(address).collect();
        let (unit, row) = units.into_iter().find_map(|u| {
            let lines = Lines::parse(self.unit_ref(u)).ok()??;
            Some((u, lines.find(address)?))
        })?;
        let name = self.naming.symbol(symbol?);
        Some(SpanName {
            name,
            file: self.naming.file(unit, row.file),
            line: (row.line != 0).then_some(row.line),
            column: (row.line != 0).then_some(row.column),
            source: Source::Dwarf,
            inlined_into: Vec::new(),
        })
    }
}
