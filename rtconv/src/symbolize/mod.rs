//! Naming span keys: each distinct key is resolved once, by the best
//! backend that can.
//!
//! Backends, one module each, in the automatic order:
//! 1. `packed`: the names `rtconv pack` appended to the dump;
//! 2. `sites`: the dump's own site section (named spans, `#[trace]`);
//! 3. `external`: an addr2line-compatible program, when `--addr2line` names one;
//! 4. `dwarf`: the module's DWARF (function, file:line, inline chain),
//!    from the binary or a separate debug file (`files` finds them);
//! 5. `symtab`: the module's ELF symbol tables;
//! 6. `dladdr`: the dump's dladdr table (no binary needed).
//!
//! `--symbolizer` replaces the order; one loop (`each_backend`) runs it,
//! for a trace's keys, a binary's addresses and a single query alike.
//! Binaries are looked for when the first backend that reads them runs, for
//! the keys still unnamed then: a packed dump opens none. A key nothing
//! names is shown as `?? (module+0xoffset)`. The names are plain data of the
//! model ([`Names`]); nothing here prints: what went wrong comes back as
//! [`Problem`]s and warnings.

mod addresses;
mod cxa;
mod dladdr;
mod dwarf;
mod dwarf_common;
mod external;
mod files;
mod index;
mod index_format;
mod packed;
mod sites;
mod sweep;
mod symtab;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

pub use addresses::{BatchSaid, Lookup, Named, Query, Session, name_batch};
pub use files::{ModuleError, ModuleFiles, Search, debuginfod_caches, hex};
pub use index::user_root as index_user_root;
pub use symtab::DataSymbol;

use crate::model::{Location, Names, Source, SpanName, Trace, locate};

/// How to name keys. The default reads no environment and keeps no index:
/// a program decides those ([`debuginfod_caches`], [`index_user_root`]).
#[derive(Clone, Debug)]
pub struct Options {
    /// Where binaries are.
    pub search: Search,
    /// The backends to try, in order; `None` for the automatic order.
    pub order: Option<Vec<Source>>,
    /// An addr2line-compatible program (the `addr2line` backend).
    pub addr2line: Option<PathBuf>,
    /// Demangle Rust and C++ names.
    pub demangle: bool,
    /// Where the persistent symbol index is kept (one directory per build-id,
    /// see the `index` module); `None`: not used.
    pub index: Option<PathBuf>,
    /// How DWARF names a batch of addresses.
    pub dwarf_reader: DwarfReader,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            search: Search { debug_roots: vec!["/usr/lib/debug".into()], ..Search::default() },
            order: None,
            addr2line: None,
            demangle: true,
            index: None,
            dwarf_reader: DwarfReader::Sweep,
        }
    }
}

/// How the `dwarf` backend reads a batch of addresses. Both give the same
/// names (the suite compares them); the choice is for comparing and
/// measuring them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DwarfReader {
    /// One pass over each compilation unit that holds an asked address (the
    /// `sweep` module); where it does not apply (split DWARF, files that are
    /// not linked ELF), `Addr2line`.
    #[default]
    Sweep,
    /// The addr2line crate's lookups, one context per core over shares of the addresses.
    Addr2line,
}

impl Options {
    /// The backends to try, in order.
    pub fn backends(&self) -> Vec<Source> {
        if let Some(order) = &self.order {
            return order.clone();
        }
        let mut order = vec![Source::Packed, Source::Site];
        if self.addr2line.is_some() {
            order.push(Source::Addr2line);
        }
        order.extend([Source::Dwarf, Source::Symtab, Source::Dladdr]);
        order
    }
}

/// A backend that failed on a module's file: a broken `--addr2line` program,
/// DWARF or symbols that do not parse. Reported as a [`Problem`], never
/// silently left as `??`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the {} backend failed on {}: {reason}", backend.name(), path.display())]
pub struct BackendError {
    /// Which backend.
    pub backend: Source,
    /// The file it read.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// A module whose files could not be used.
#[derive(Debug)]
pub struct Problem {
    /// What went wrong.
    pub kind: ModuleError,
    /// Distinct keys in the module.
    pub keys: usize,
    /// Of those, the keys some backend named all the same.
    pub named_otherwise: usize,
    /// The backends that named those, each once.
    pub named_by: Vec<Source>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {} distinct span key(s) left unnamed", self.kind, self.keys - self.named_otherwise)?;
        match self.named_by.as_slice() {
            [] => {}
            [Source::Dladdr] => write!(f, ", {} named from the dump's dladdr table", self.named_otherwise)?,
            others => {
                let names: Vec<&str> = others.iter().map(|s| s.name()).collect();
                write!(f, ", {} named by {}", self.named_otherwise, names.join(", "))?;
            }
        }
        Ok(())
    }
}

/// What naming a trace's keys found.
#[derive(Debug, Default)]
pub struct Naming {
    /// A name for every key of the trace.
    pub names: Names,
    /// The files found for each module index whose keys a file backend was asked for.
    pub files: BTreeMap<usize, Result<ModuleFiles, ModuleError>>,
    /// Modules whose files could not be used, and backends that failed on them.
    pub problems: Vec<Problem>,
    /// Lines worth saying that lost no name (the symbol index could not be
    /// used or written), each once per [`Cache`].
    pub warnings: Vec<String>,
}

/// What naming a batch of addresses found worth saying without failing.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Names poorer than the build's (a split DWARF unit missing).
    pub(crate) degraded: Vec<BackendError>,
    /// The symbol index's troubles.
    pub(crate) warnings: Vec<String>,
}

/// A name, demangled (Rust legacy and v0, C++) when asked. Only names
/// that are mangled are touched: a C function `f` or `i` stays itself
/// (a bare `f` is also the Itanium encoding of `float`).
pub(crate) fn demangled(name: &str, demangle: bool) -> String {
    let mangled = ["_Z", "__Z", "_R"].iter().any(|prefix| name.starts_with(prefix));
    if !(demangle && mangled) {
        return name.to_string();
    }
    match addr2line::demangle_auto(name.into(), None) {
        // An Itanium name the demangler cannot read: the C++ runtime's (GNU's) reads more.
        shown if shown == name => cxa::demangle(name).unwrap_or_else(|| name.to_string()),
        shown => shown.into_owned(),
    }
}

/// Whether `name` is an assembler-local label (`.Ltmp1`, `.LBB0_2`) or an
/// Arm/AArch64/RISC-V mapping symbol (`$t`, `$d.1`, `$x`): marks inside a
/// function, never a function's name.
pub(crate) fn is_local_label(name: &str) -> bool {
    name.starts_with(".L") || name.starts_with('$')
}

/// Names already found, by module build-id and file address, shared by
/// every dump converted with it (a batch of dumps from one build names each
/// address once), and the warnings already given. Safe to share between threads.
#[derive(Debug, Default)]
pub struct Cache {
    names: std::sync::Mutex<HashMap<(Vec<u8>, u64), SpanName>>,
    said: std::sync::Mutex<HashSet<String>>,
    hits: std::sync::atomic::AtomicUsize,
}

impl Cache {
    /// Keys named from the cache so far.
    pub fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Vec<u8>, u64), SpanName>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `warnings` less those already given through this cache.
    fn unsaid(&self, warnings: Vec<String>) -> Vec<String> {
        let mut said = self.said.lock().unwrap_or_else(|p| p.into_inner());
        warnings.into_iter().filter(|w| said.insert(w.clone())).collect()
    }
}

/// The one loop over the backends: each, in `backends`' order, is asked to
/// name the items of `names` still unnamed (`pending`, their indices), and
/// returns one name or none for each, in order; the loop ends when every
/// item has a name.
pub(crate) fn each_backend(
    backends: &[Source],
    names: &mut [Option<SpanName>],
    mut name_with: impl FnMut(Source, &[usize]) -> Vec<Option<SpanName>>,
) {
    for &backend in backends {
        let pending: Vec<usize> = (0..names.len()).filter(|&i| names[i].is_none()).collect();
        if pending.is_empty() {
            break;
        }
        let found = name_with(backend, &pending);
        for (i, name) in pending.into_iter().zip(found) {
            if name.is_some() {
                names[i] = name;
            }
        }
    }
}

/// Resolves every distinct key of `trace`, opening each module's files at
/// most once; looks keys up in `cache` first (by the module's build-id),
/// and adds what the backends find to it.
pub fn symbolize(trace: &Trace, opts: &Options, cache: &Cache) -> Naming {
    let queries: Vec<(u64, Location)> = trace.keys.iter().map(|&k| (k, locate(trace, k))).collect();
    // The cache key of a code address: its module's build-id (none, none) and file address.
    let cache_key = |location: Location| match location {
        Location::Module { index, file_address } if !trace.modules[index].build_id.is_empty() => {
            Some((trace.modules[index].build_id.clone(), file_address))
        }
        _ => None,
    };
    let mut names: Vec<Option<SpanName>> = vec![None; queries.len()];
    {
        let cached = cache.lock();
        for (slot, &(_, location)) in names.iter_mut().zip(&queries) {
            if let Some(name) = cache_key(location).and_then(|k| cached.get(&k)) {
                *slot = Some(name.clone());
                cache.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    let mut files = BTreeMap::new();
    let mut files_looked_up = false;
    let mut failures: Vec<(usize, BackendError)> = Vec::new();
    let mut warnings = Vec::new();
    each_backend(&opts.backends(), &mut names, |backend, pending| {
        // Binaries are looked for when the first backend that reads them runs, for the keys still unnamed.
        if !files_looked_up && backend.reads_files() {
            files_looked_up = true;
            for &i in pending {
                if let Location::Module { index, .. } = queries[i].1 {
                    files.entry(index).or_insert_with(|| opts.search.find(&trace.modules[index]));
                }
            }
        }
        match backend {
            Source::Packed => pending.iter().map(|&i| packed::resolve(trace, queries[i].0, opts.demangle)).collect(),
            Source::Site => pending
                .iter()
                .map(|&i| match queries[i].1 {
                    Location::Site { offset } => sites::resolve(trace, offset),
                    _ => None,
                })
                .collect(),
            Source::Dladdr => pending.iter().map(|&i| dladdr::resolve(trace, queries[i].0, opts.demangle)).collect(),
            Source::Dwarf | Source::Symtab | Source::Addr2line => {
                per_module(&queries, pending, &files, backend, opts, &mut failures, &mut warnings)
            }
            Source::Unknown => vec![None; pending.len()],
        }
    });
    {
        let mut cached = cache.lock();
        for (name, &(_, location)) in names.iter().zip(&queries) {
            // Only names read from the build's own files are shared: what one dump says of
            // itself (packed names, its dladdr table) may be wrong and must not name another's keys.
            if let (Some(k), Some(name)) = (cache_key(location), name)
                && name.source.reads_files()
            {
                cached.entry(k).or_insert_with(|| name.clone());
            }
        }
    }
    // A module whose keys no backend named, and that none read: say so.
    if !files_looked_up {
        for (name, &(_, location)) in names.iter().zip(&queries) {
            if let (Location::Module { index, .. }, None) = (location, name) {
                let path = trace.modules[index].path.clone();
                files.entry(index).or_insert(Err(ModuleError::NotRead { path }));
            }
        }
    }
    // Whatever is left is unknown, shown with where it points.
    let named: Vec<SpanName> = names
        .into_iter()
        .zip(&queries)
        .map(|(name, &(key, location))| name.unwrap_or_else(|| unknown(trace, key, location)))
        .collect();
    // Modules whose files could not be used, then backends that failed on a module's files.
    let unusable = files.iter().filter_map(|(&index, found)| Some((index, found.as_ref().err()?.clone())));
    let failed = failures.into_iter().map(|(index, e)| (index, ModuleError::Backend(e)));
    let by_module = keys_by_module(&queries, 0..queries.len());
    let mut problems = Vec::new();
    for (index, kind) in unusable.chain(failed) {
        let in_module: &[usize] = by_module.get(&index).map_or(&[], |(at, _)| at);
        let mut named_by: Vec<Source> =
            in_module.iter().map(|&i| named[i].source).filter(|s| *s != Source::Unknown).collect();
        let named_otherwise = named_by.len();
        named_by.sort_unstable();
        named_by.dedup();
        problems.push(Problem { kind, keys: in_module.len(), named_otherwise, named_by });
    }
    Naming { names: Names::new(trace.keys.clone(), named), files, problems, warnings: cache.unsaid(warnings) }
}

/// The name of a key no backend named: `??` and where it points.
fn unknown(trace: &Trace, key: u64, location: Location) -> SpanName {
    let place = match location {
        Location::Site { offset } => format!("site+{offset:#x}"),
        Location::Module { index, file_address } => {
            let module = &trace.modules[index].path;
            let base = module.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            format!("{base}+{file_address:#x}")
        }
        Location::Unmapped => format!("{key:#x}"),
    };
    SpanName {
        name: format!("?? ({place})"),
        file: None,
        line: None,
        column: None,
        source: Source::Unknown,
        inlined_into: Vec::new(),
    }
}

/// The code-address items among `queries[at]` by module index: their
/// positions in `at`'s order, and their file addresses (one pass, whatever
/// the number of modules).
fn keys_by_module(
    queries: &[(u64, Location)],
    at: impl IntoIterator<Item = usize>,
) -> BTreeMap<usize, (Vec<usize>, Vec<u64>)> {
    let mut by_module: BTreeMap<usize, (Vec<usize>, Vec<u64>)> = BTreeMap::new();
    for (position, i) in at.into_iter().enumerate() {
        if let Location::Module { index, file_address } = queries[i].1 {
            let (positions, addresses) = by_module.entry(index).or_default();
            positions.push(position);
            addresses.push(file_address);
        }
    }
    by_module
}

/// Runs a file-based backend over the `pending` keys of each module with
/// usable files: one name or none per pending key. A backend that fails on
/// a module, or gives poorer names than the build's, is added to
/// `failures`; the symbol index's troubles to `warnings`.
fn per_module(
    queries: &[(u64, Location)],
    pending: &[usize],
    files: &BTreeMap<usize, Result<ModuleFiles, ModuleError>>,
    backend: Source,
    opts: &Options,
    failures: &mut Vec<(usize, BackendError)>,
    warnings: &mut Vec<String>,
) -> Vec<Option<SpanName>> {
    let mut out = vec![None; pending.len()];
    for (index, (positions, addresses)) in keys_by_module(queries, pending.iter().copied()) {
        let Some(Ok(found)) = files.get(&index) else { continue };
        let mut findings = Findings::default();
        let resolved = resolve_file(found, &addresses, backend, opts, &mut findings);
        failures.extend(findings.degraded.into_iter().map(|e| (index, e)));
        warnings.extend(findings.warnings);
        match resolved {
            Some(Ok(resolved)) => {
                for (position, name) in positions.into_iter().zip(resolved) {
                    out[position] = name;
                }
            }
            Some(Err(e)) => failures.push((index, e)),
            None => {}
        }
    }
    out
}

/// Names `addresses` (as the ELF file at `binary` sees them, like
/// addr2line's) with `opts`' backends in order, each taking the addresses
/// the ones before it left unnamed: one name per address (`None` where no
/// backend knew it), and the backends that failed. `Err` when `binary` is not
/// an object file this crate reads.
pub fn resolve_addresses(
    binary: &Path,
    addresses: &[u64],
    opts: &Options,
) -> Result<(Vec<Option<SpanName>>, Vec<BackendError>), ModuleError> {
    files::check_object(binary)?;
    let files = ModuleFiles { binary: binary.into(), debug: Some(binary.into()) };
    let (names, findings) = resolve_module_files(&files, addresses, opts);
    Ok((names, findings.degraded))
}

/// Names `addresses` (file addresses) in one module's files with `opts`'
/// backends in order: one name per address, and what went wrong (the
/// backends that failed are in `degraded`).
pub(crate) fn resolve_module_files(
    files: &ModuleFiles,
    addresses: &[u64],
    opts: &Options,
) -> (Vec<Option<SpanName>>, Findings) {
    let mut names: Vec<Option<SpanName>> = vec![None; addresses.len()];
    let mut findings = Findings::default();
    each_backend(&opts.backends(), &mut names, |backend, pending| {
        let wanted: Vec<u64> = pending.iter().map(|&i| addresses[i]).collect();
        match resolve_file(files, &wanted, backend, opts, &mut findings) {
            Some(Ok(found)) => found,
            Some(Err(e)) => {
                findings.degraded.push(e);
                vec![None; pending.len()]
            }
            None => vec![None; pending.len()],
        }
    });
    (names, findings)
}

/// Why names from `debug` lack what its split DWARF units hold: one error per missing `.dwo`.
pub(crate) fn split_units_missing(debug: &Path) -> Vec<BackendError> {
    dwarf::missing_split_units(debug)
        .into_iter()
        .map(|dwo| BackendError {
            backend: Source::Dwarf,
            path: debug.into(),
            reason: format!(
                "its split DWARF unit {} is missing (no .dwp beside it either): functions there are named \
                 without their inline chains; put the .dwo back where it was built, or a .dwp beside the binary",
                dwo.display()
            ),
        })
        .collect()
}

/// Names file addresses in one module's files with one backend: one entry
/// per address, or why the backend failed; `None` if the backend does not
/// apply to them (no DWARF, no program given, not a file backend). What
/// made names poorer without failing the backend (a missing `.dwo`), and
/// the symbol index's troubles, go to `findings`.
pub(crate) fn resolve_file(
    files: &ModuleFiles,
    addresses: &[u64],
    backend: Source,
    opts: &Options,
    findings: &mut Findings,
) -> Option<Result<Vec<Option<SpanName>>, BackendError>> {
    Some(match backend {
        Source::Dwarf => dwarf::resolve_indexed(files.debug.as_ref()?, addresses, opts, findings),
        Source::Symtab => symtab::resolve(files.debug.as_ref().unwrap_or(&files.binary), addresses, opts.demangle),
        Source::Addr2line => external::resolve(
            opts.addr2line.as_ref()?,
            files.debug.as_ref().unwrap_or(&files.binary),
            addresses,
            opts.demangle,
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{demangled, is_local_label};

    #[test]
    fn labels_and_mapping_symbols_are_not_function_names() {
        for label in [".Ltmp1", ".LBB0_2", "$t", "$d.12", "$x", "$a"] {
            assert!(is_local_label(label), "{label}");
        }
        for function in ["fib", "_ZN3fw3fib17h0123456789abcdefE", "__cortex_m_rt_SysTick", "L1"] {
            assert!(!is_local_label(function), "{function}");
        }
    }

    #[test]
    fn only_mangled_names_are_demangled() {
        for c_name in ["f", "d", "i", "main", "v", "Sa"] {
            assert_eq!(demangled(c_name, true), c_name);
        }
        assert_eq!(demangled("_Z3fooi", true), "foo(int)");
        assert_eq!(demangled("_ZN8workload3fib17h0123456789abcdefE", true), "workload::fib");
        assert_eq!(demangled("_RNvCs1234_8workload3fib", true), "workload::fib");
        assert_eq!(demangled("_Z3fooi", false), "_Z3fooi");
    }
}
