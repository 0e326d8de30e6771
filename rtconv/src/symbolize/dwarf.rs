//! Names from DWARF: the innermost function at an address (inlined or
//! not), its file and line, and the chain of functions it was inlined into.
//!
//! A batch is named by [`super::sweep`] (one pass per compilation unit), an
//! address asked alone by a [`Worker`] (an `addr2line` context kept open).
//! Where the sweep does not apply (split DWARF, files that are not linked
//! ELF) or [`DwarfReader::Addr2line`] asks for it, a module's addresses
//! are sorted and cut into one share of neighbours per core (rayon's thread
//! count); each share gets a thread with its own
//! `addr2line` context over the same file, which parses only the
//! compilation units its share touches, so the work divides across cores
//! instead of being repeated. A thread that finishes early takes work from
//! the far end of another's share.

use std::path::Path;

use super::dwarf_common::{MIN_PER_WORKER, NameCache, code_ranges};
use super::index::Index;
use super::{BackendError, DwarfReader, Findings, Options};
use crate::model::{Frame, Source, SpanName};

/// As [`resolve`], answering from the build's persistent index
/// ([`super::index`]) where it can: DWARF is parsed only for the addresses
/// the index lacks, and their answers are added to it — unless a split unit
/// is missing (then the answers are poorer than the build's, and are said
/// in `findings.degraded`, not kept). The index's troubles go to `findings.warnings`.
pub(crate) fn resolve_indexed(
    debug: &Path,
    file_addresses: &[u64],
    opts: &Options,
    findings: &mut Findings,
) -> Result<Vec<Option<SpanName>>, BackendError> {
    let warnings = &mut findings.warnings;
    let mut index = opts.index.as_deref().and_then(|root| Index::open(root, debug, opts.demangle, warnings));
    let mut out: Vec<Option<Option<SpanName>>> =
        file_addresses.iter().map(|&a| index.as_ref().and_then(|ix| ix.get(a))).collect();
    let misses: Vec<usize> = (0..out.len()).filter(|&i| out[i].is_none()).collect();
    if !misses.is_empty() {
        let wanted: Vec<u64> = misses.iter().map(|&i| file_addresses[i]).collect();
        let named = resolve(debug, &wanted, opts.demangle, opts.dwarf_reader)?;
        let missing = super::split_units_missing(debug);
        if let Some(ix) = index.as_mut().filter(|_| missing.is_empty()) {
            for (&address, name) in wanted.iter().zip(&named) {
                ix.add(address, name.as_ref());
            }
            ix.save(&mut findings.warnings);
        }
        findings.degraded.extend(missing);
        for (i, name) in misses.into_iter().zip(named) {
            out[i] = Some(name);
        }
    }
    Ok(out.into_iter().map(Option::flatten).collect())
}

/// Names `file_addresses` (ELF virtual addresses, sorted or not) from the
/// DWARF in `debug`, read as `reader` says. Returns one entry per address, in order.
fn resolve(
    debug: &Path,
    file_addresses: &[u64],
    demangle: bool,
    reader: DwarfReader,
) -> Result<Vec<Option<SpanName>>, BackendError> {
    if reader == DwarfReader::Sweep
        && let Some(named) = super::sweep::resolve(debug, file_addresses, demangle)
    {
        return named;
    }
    let code = code_ranges(debug);
    let in_code = |address: u64| code.as_ref().is_none_or(|code| code.iter().any(|r| r.contains(&address)));
    let mut order: Vec<usize> = (0..file_addresses.len()).collect();
    order.sort_unstable_by_key(|&i| file_addresses[i]);
    let workers = rayon::current_num_threads().min(file_addresses.len() / MIN_PER_WORKER).max(1);
    let segment_len = order.len().div_ceil(workers).max(1);
    let segments: Vec<Segment> =
        (0..workers).map(|w| Segment::new(w * segment_len, ((w + 1) * segment_len).min(order.len()))).collect();
    let work = |mut worker: Worker, own: usize| {
        let mut named = Vec::new();
        while let Some(run) = segments[own].take_front().or_else(|| steal(&segments)) {
            named.extend(
                order[run]
                    .iter()
                    .map(|&i| (i, in_code(file_addresses[i]).then(|| worker.lookup(file_addresses[i])).flatten())),
            );
        }
        named
    };
    // Every thread builds its context at once, in parallel; a file that
    // cannot be loaded fails on this thread, and the others then stop.
    let resolved: Result<Vec<Named>, BackendError> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..workers)
            .map(|own| {
                let work = &work;
                scope.spawn(move || match addr2line::Loader::new(debug) {
                    Ok(loader) => work(Worker::new(loader, demangle), own),
                    Err(_) => Vec::new(),
                })
            })
            .collect();
        let first = match addr2line::Loader::new(debug) {
            Ok(loader) => loader,
            Err(e) => {
                // Leave nothing for the others to do.
                segments.iter().for_each(Segment::clear);
                return Err(BackendError { backend: Source::Dwarf, path: debug.into(), reason: e.to_string() });
            }
        };
        let mut all = vec![work(Worker::new(first, demangle), 0)];
        all.extend(others.into_iter().map(|h| h.join().unwrap_or_default()));
        Ok(all)
    });
    let mut out = vec![None; file_addresses.len()];
    for (i, name) in resolved?.into_iter().flatten() {
        out[i] = name;
    }
    Ok(out)
}

/// One worker's answers: (index into the caller's addresses, name).
type Named = Vec<(usize, Option<SpanName>)>;

/// Addresses taken at a time.
const RUN: usize = 32;

/// A worker's share of the sorted addresses: it takes runs from the front;
/// a worker that has finished its own takes runs from the back of the
/// largest other share, so shares stay apart (each compilation unit parsed
/// by one thread) until the very end.
struct Segment(std::sync::Mutex<(usize, usize)>);

impl Segment {
    fn new(front: usize, back: usize) -> Self {
        Segment(std::sync::Mutex::new((front, back)))
    }

    fn clear(&self) {
        let mut range = self.0.lock().unwrap_or_else(|p| p.into_inner());
        range.1 = range.0;
    }

    fn remaining(&self) -> usize {
        let (front, back) = *self.0.lock().unwrap_or_else(|p| p.into_inner());
        back - front
    }

    fn take_front(&self) -> Option<std::ops::Range<usize>> {
        let mut range = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (front, back) = *range;
        (front < back).then(|| {
            range.0 = (front + RUN).min(back);
            front..range.0
        })
    }

    fn take_back(&self) -> Option<std::ops::Range<usize>> {
        let mut range = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (front, back) = *range;
        (front < back).then(|| {
            range.1 = back.saturating_sub(RUN).max(front);
            range.1..back
        })
    }
}

fn steal(segments: &[Segment]) -> Option<std::ops::Range<usize>> {
    segments.iter().max_by_key(|s| s.remaining()).and_then(Segment::take_back)
}

/// One thread's context, and the names it has already demangled: inlined
/// library functions recur in thousands of chains, and demangling them
/// again each time was a third of the work.
pub(crate) struct Worker {
    loader: addr2line::Loader,
    names: NameCache,
}

impl Worker {
    fn new(loader: addr2line::Loader, demangle: bool) -> Self {
        Worker { loader, names: NameCache::new(demangle) }
    }

    /// A context over the DWARF in `debug`, for addresses asked one at a time
    /// (`rtconv symbolize` reading queries as they come).
    pub(crate) fn open(debug: &Path, demangle: bool) -> Result<Self, BackendError> {
        addr2line::Loader::new(debug).map(|loader| Worker::new(loader, demangle)).map_err(|e| BackendError {
            backend: Source::Dwarf,
            path: debug.into(),
            reason: e.to_string(),
        })
    }

    /// One address's name, if it lies in `debug`'s code (see [`code_ranges`]).
    pub(crate) fn name(&mut self, code: Option<&[std::ops::Range<u64>]>, address: u64) -> Option<SpanName> {
        let in_code = code.is_none_or(|code| code.iter().any(|r| r.contains(&address)));
        if in_code { self.lookup(address) } else { None }
    }

    /// One address. Outside inlined code the innermost frame is the function
    /// the symbol table names, and the symbol's (demangled) name is used: it
    /// has the full path and generic arguments, which `line-tables-only`
    /// DWARF omits (`fib` there, `workload::fib` in the symbol table), as
    /// GNU addr2line and llvm-symbolizer do.
    fn lookup(&mut self, address: u64) -> Option<SpanName> {
        // No half-open range holds the last address, and addr2line computes `address + 1`
        // (an overflow, a panic where overflow checks are on: found by the symbolize_stdin fuzzer).
        if address == u64::MAX {
            return None;
        }
        let (loader, names) = (&self.loader, &mut self.names);
        let mut chain: Vec<Frame> = Vec::new();
        let mut frames = loader.find_frames(address).ok()?;
        let mut has_function = false;
        while let Ok(Some(frame)) = frames.next() {
            let function = frame.function.as_ref().and_then(|f| Some((f.raw_name().ok()?, f.language.map(|l| l.0))));
            if chain.is_empty() {
                has_function = function.is_some();
            }
            let location = frame.location.as_ref();
            chain.push(Frame {
                function: function.map_or_else(|| "??".to_string(), |(raw, language)| names.name(&raw, language)),
                file: location.and_then(|l| l.file).map(str::to_owned),
                line: location.and_then(|l| l.line),
                column: location.and_then(|l| l.column),
            });
        }
        if !has_function {
            // Line info without function entries (code from a crate built with
            // line tables only): the symbol's name with the line table's place.
            let location = loader.find_location(address).ok().flatten()?;
            let (file, line, column) = (location.file.map(str::to_owned), location.line, location.column);
            let name = names.name(loader.find_symbol(address).filter(|n| !super::is_local_label(n))?, None);
            return Some(SpanName { name, file, line, column, source: Source::Dwarf, inlined_into: Vec::new() });
        }
        // The outermost frame is the function the code is in: named, as GNU addr2line and
        // llvm-symbolizer name it, by the symbol at the address (its full signature, a clone
        // suffix such as `.isra.0`), if that symbol is the function's own (not a label inside it,
        // such as the `.Ltmp1` an Arm `movw`/`movt` of a label leaves in the symbol table).
        if let Some(symbol) = loader.find_symbol(address).filter(|s| !super::is_local_label(s))
            && let Some(outermost) = chain.last_mut()
        {
            outermost.function = names.name(symbol, None);
        }
        SpanName::from_chain(chain, Source::Dwarf)
    }
}

/// The split DWARF files (`.dwo`) that `debug`'s skeleton units name and
/// that are not where the skeleton says (its compilation directory), when
/// no `.dwp` package lies beside `debug`: the functions they describe are
/// named from the skeleton's line table alone, without inline chains.
pub(crate) fn missing_split_units(debug: &Path) -> Vec<std::path::PathBuf> {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use addr2line::gimli;
    use object::{Object, ObjectSection};

    let mut package = debug.as_os_str().to_owned();
    package.push(".dwp");
    if Path::new(&package).is_file() {
        return Vec::new();
    }
    let Ok(bytes) = crate::io::map_file(debug, crate::io::Pages::OnDemand) else { return Vec::new() };
    let Ok(file) = object::File::parse(&*bytes) else { return Vec::new() };
    // A skeleton unit's addresses are in the file's `.debug_addr` (a `.dwo` holds
    // none): without that section there is no split unit, and no unit need be read.
    if file.section_by_name(".debug_addr").is_none() {
        return Vec::new();
    }
    let endian = if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
    let load = |id: gimli::SectionId| -> Result<std::borrow::Cow<'_, [u8]>, gimli::Error> {
        let data = file.section_by_name(id.name()).and_then(|s| s.uncompressed_data().ok());
        Ok(data.unwrap_or(std::borrow::Cow::Borrowed(&[])))
    };
    let Ok(sections) = gimli::DwarfSections::load(load) else { return Vec::new() };
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let mut missing = Vec::new();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else { continue };
        let Ok(Some(name)) = unit.dwo_name() else { continue };
        let Ok(name) = dwarf.attr_string(&unit, name) else { continue };
        let name = Path::new(OsStr::from_bytes(name.slice()));
        let path = match unit.comp_dir {
            Some(dir) if name.is_relative() => Path::new(OsStr::from_bytes(dir.slice())).join(name),
            _ => name.to_path_buf(),
        };
        if !path.is_file() && !missing.contains(&path) {
            missing.push(path);
        }
    }
    missing
}
