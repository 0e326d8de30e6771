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
//! `--symbolizer` replaces the order. Binaries are looked for when the first
//! backend that reads them runs, for the keys still unnamed then: a packed
//! dump opens none. A key nothing names is shown as
//! `?? (module+0xoffset)`.

pub mod answer;
mod cxa;
mod dladdr;
mod dwarf;
mod external;
mod files;
pub mod index;
mod index_format;
mod name_table;
mod packed;
mod sites;
mod sweep;
mod symtab;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;

pub(crate) use files::hex;
pub use files::{ModuleError, ModuleFiles, Search, debuginfod_caches};

use crate::model::Trace;
use crate::model::{Location, locate};
use name_table::NameTable;

/// One function in an inline chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Function name.
    pub function: String,
    /// Source file, when known.
    pub file: Option<String>,
    /// Source line, when known.
    pub line: Option<u32>,
}

/// The name of one span key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanName {
    /// The innermost function, or the label.
    pub name: String,
    /// Source file, when known.
    pub file: Option<String>,
    /// Source line, when known.
    pub line: Option<u32>,
    /// Which backend named it.
    pub source: Source,
    /// The functions the innermost one was inlined into, innermost first.
    pub inlined_into: Vec<Frame>,
}

impl SpanName {
    /// The name whose frames are `chain`, innermost first (`None` if it is empty).
    pub(crate) fn from_chain(mut chain: Vec<Frame>, source: Source) -> Option<SpanName> {
        if chain.is_empty() {
            return None;
        }
        let innermost = chain.remove(0);
        Some(SpanName {
            name: innermost.function,
            file: innermost.file,
            line: innermost.line,
            source,
            inlined_into: chain,
        })
    }
}

/// A way of naming keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// The dump's names section, written by `rtconv pack`.
    Packed,
    /// A site descriptor in the dump.
    Site,
    /// DWARF debug info.
    Dwarf,
    /// ELF symbol tables.
    Symtab,
    /// The dump's dladdr table (dynamic symbols, resolved on the target).
    Dladdr,
    /// An external addr2line-compatible program.
    Addr2line,
    /// Nothing: shown as `??`.
    Unknown,
}

impl Source {
    /// Its name in messages and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Source::Packed => "packed",
            Source::Site => "sites",
            Source::Dwarf => "dwarf",
            Source::Symtab => "symtab",
            Source::Dladdr => "dladdr",
            Source::Addr2line => "addr2line",
            Source::Unknown => "unknown",
        }
    }

    /// Whether it reads the module's files (the others read only the dump).
    pub fn reads_files(self) -> bool {
        matches!(self, Source::Dwarf | Source::Symtab | Source::Addr2line)
    }
}

/// How to name keys.
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
    /// Where the persistent symbol index is kept ([`index`]); `None`: not used.
    pub index: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            search: Search {
                debug_roots: vec!["/usr/lib/debug".into()],
                debuginfod_caches: files::debuginfod_caches(),
                ..Search::default()
            },
            order: None,
            addr2line: None,
            demangle: true,
            index: index::default_root(),
        }
    }
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

/// Names for every key of a trace.
#[derive(Debug, Default)]
pub struct Symbols {
    names: NameTable,
    /// The files found for each module index.
    pub files: BTreeMap<usize, Result<ModuleFiles, ModuleError>>,
}

impl Symbols {
    /// The name of `key` (every key of the trace has one).
    pub fn get(&self, key: u64) -> Option<&SpanName> {
        self.names.get(&key)
    }

    /// How many keys each backend named, and how many none did.
    pub fn counts(&self) -> Vec<(Source, usize)> {
        let mut counts: BTreeMap<Source, usize> = BTreeMap::new();
        for n in self.names.values() {
            *counts.entry(n.source).or_default() += 1;
        }
        counts.into_iter().collect()
    }
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

/// Names already found, by module build-id and file address, shared by
/// every dump converted with it (a batch of dumps from one build names each
/// address once). Safe to share between threads.
#[derive(Debug, Default)]
pub struct Cache {
    names: std::sync::Mutex<HashMap<(Vec<u8>, u64), SpanName>>,
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
}

/// Resolves every distinct key of `trace`, opening each module's files at most once.
pub fn symbolize(trace: &Trace, opts: &Options) -> (Symbols, Vec<Problem>) {
    symbolize_cached(trace, opts, &Cache::default())
}

/// As [`symbolize`], first looking keys up in `cache` (by the module's
/// build-id) and adding what the backends find to it.
pub fn symbolize_cached(trace: &Trace, opts: &Options, cache: &Cache) -> (Symbols, Vec<Problem>) {
    let queries: Vec<(u64, Location)> = trace.keys.iter().map(|&k| (k, locate(trace, k))).collect();
    let mut symbols = Symbols { names: NameTable::new(&trace.keys), files: BTreeMap::new() };
    // The cache key of a code address: its module's build-id (none, none) and file address.
    let cache_key = |location: Location| match location {
        Location::Module { index, file_address } if !trace.modules[index].build_id.is_empty() => {
            Some((trace.modules[index].build_id.clone(), file_address))
        }
        _ => None,
    };
    {
        let cached = cache.lock();
        for &(key, location) in &queries {
            if let Some(name) = cache_key(location).and_then(|k| cached.get(&k)) {
                symbols.names.insert(key, name.clone());
                cache.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    let mut files_looked_up = false;
    let mut failures: Vec<(usize, BackendError)> = Vec::new();
    for backend in opts.backends() {
        let pending: Vec<(u64, Location)> =
            queries.iter().copied().filter(|(k, _)| !symbols.names.contains_key(k)).collect();
        if pending.is_empty() {
            break;
        }
        // Binaries are looked for when the first backend that reads them runs, for the keys still unnamed.
        if !files_looked_up && backend.reads_files() {
            files_looked_up = true;
            for &(_, location) in &pending {
                if let Location::Module { index, .. } = location {
                    symbols.files.entry(index).or_insert_with(|| opts.search.find(&trace.modules[index]));
                }
            }
        }
        match backend {
            Source::Packed => {
                for (key, _) in pending {
                    if let Some(name) = packed::resolve(trace, key, opts.demangle) {
                        symbols.names.insert(key, name);
                    }
                }
            }
            Source::Site => {
                for (key, location) in pending {
                    if let Location::Site { offset } = location
                        && let Some(name) = sites::resolve(trace, offset)
                    {
                        symbols.names.insert(key, name);
                    }
                }
            }
            Source::Dladdr => {
                for (key, _) in pending {
                    if let Some(name) = dladdr::resolve(trace, key, opts.demangle) {
                        symbols.names.insert(key, name);
                    }
                }
            }
            Source::Dwarf | Source::Symtab | Source::Addr2line => {
                per_module(&pending, &symbols.files, backend, opts, &mut symbols.names, &mut failures);
            }
            Source::Unknown => {}
        }
    }
    {
        let mut cached = cache.lock();
        for &(key, location) in &queries {
            // Only names read from the build's own files are shared: what one dump says of
            // itself (packed names, its dladdr table) may be wrong and must not name another's keys.
            if let (Some(k), Some(name)) = (cache_key(location), symbols.names.get(&key))
                && name.source.reads_files()
            {
                cached.entry(k).or_insert_with(|| name.clone());
            }
        }
    }
    // A module whose keys no backend named, and that none read: say so.
    if !files_looked_up {
        for &(key, location) in &queries {
            if let Location::Module { index, .. } = location
                && !symbols.names.contains_key(&key)
            {
                let path = trace.modules[index].path.clone();
                symbols.files.entry(index).or_insert(Err(ModuleError::NotRead { path }));
            }
        }
    }
    // Whatever is left is unknown, shown with where it points.
    for &(key, location) in &queries {
        symbols.names.or_insert_with(key, || {
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
                source: Source::Unknown,
                inlined_into: Vec::new(),
            }
        });
    }
    // Modules whose files could not be used, then backends that failed on a module's files.
    let unusable = symbols.files.iter().filter_map(|(&index, found)| Some((index, found.as_ref().err()?.clone())));
    let failed = failures.into_iter().map(|(index, e)| (index, ModuleError::Backend(e)));
    let by_module = keys_by_module(&queries);
    let mut problems = Vec::new();
    for (index, kind) in unusable.chain(failed) {
        let in_module: &[u64] = by_module.get(&index).map_or(&[], |(keys, _)| keys);
        let mut named_by: Vec<Source> = in_module
            .iter()
            .filter_map(|k| symbols.names.get(k))
            .map(|n| n.source)
            .filter(|s| *s != Source::Unknown)
            .collect();
        let named_otherwise = named_by.len();
        named_by.sort_unstable();
        named_by.dedup();
        problems.push(Problem { kind, keys: in_module.len(), named_otherwise, named_by });
    }
    (symbols, problems)
}

/// The code-address keys of `queries` by module index: the keys, and their
/// file addresses in the same order (one pass, whatever the number of modules).
fn keys_by_module(queries: &[(u64, Location)]) -> BTreeMap<usize, (Vec<u64>, Vec<u64>)> {
    let mut by_module: BTreeMap<usize, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for &(key, location) in queries {
        if let Location::Module { index, file_address } = location {
            let (keys, addresses) = by_module.entry(index).or_default();
            keys.push(key);
            addresses.push(file_address);
        }
    }
    by_module
}

/// Runs a file-based backend over the pending keys of each module with
/// usable files; a backend that fails on a module is added to `failures`.
fn per_module(
    pending: &[(u64, Location)],
    files: &BTreeMap<usize, Result<ModuleFiles, ModuleError>>,
    backend: Source,
    opts: &Options,
    names: &mut NameTable,
    failures: &mut Vec<(usize, BackendError)>,
) {
    for (index, (keys, addresses)) in keys_by_module(pending) {
        let Some(Ok(found)) = files.get(&index) else { continue };
        let mut degraded = Vec::new();
        let resolved = resolve_file(found, &addresses, backend, opts, &mut degraded);
        failures.extend(degraded.into_iter().map(|e| (index, e)));
        match resolved {
            Some(Ok(resolved)) => {
                for (key, name) in keys.into_iter().zip(resolved) {
                    if let Some(name) = name {
                        names.insert(key, name);
                    }
                }
            }
            Some(Err(e)) => failures.push((index, e)),
            None => {}
        }
    }
}

/// The longest address line read (`rtconv symbolize`'s stdin) (an address needs 18 bytes).
pub const MAX_ADDRESS_LINE: usize = 4096;

/// Names `addresses` (as the ELF file at `binary` sees them, like
/// addr2line's) with `opts`' backends in order, each taking the addresses
/// the ones before it left unnamed: one name per address (`None` where no
/// backend knew it), and the backends that failed. `Err` when `binary` is not
/// an object file this crate reads.
pub fn resolve_addresses(
    binary: &std::path::Path,
    addresses: &[u64],
    opts: &Options,
) -> Result<(Vec<Option<SpanName>>, Vec<BackendError>), ModuleError> {
    files::check_object(binary)?;
    let files = ModuleFiles { binary: binary.into(), debug: Some(binary.into()) };
    Ok(resolve_module_files(&files, addresses, opts))
}

/// Names `addresses` (file addresses) in one module's files with `opts`'
/// backends in order, each taking the addresses the ones before it left
/// unnamed: one name per address, and the backends that failed.
pub fn resolve_module_files(
    files: &ModuleFiles,
    addresses: &[u64],
    opts: &Options,
) -> (Vec<Option<SpanName>>, Vec<BackendError>) {
    let mut names: Vec<Option<SpanName>> = vec![None; addresses.len()];
    let mut failures = Vec::new();
    for backend in opts.backends() {
        let pending: Vec<usize> = (0..addresses.len()).filter(|&i| names[i].is_none()).collect();
        if pending.is_empty() {
            break;
        }
        let wanted: Vec<u64> = pending.iter().map(|&i| addresses[i]).collect();
        match resolve_file(files, &wanted, backend, opts, &mut failures) {
            Some(Ok(found)) => {
                for (i, name) in pending.into_iter().zip(found) {
                    names[i] = name;
                }
            }
            Some(Err(e)) => failures.push(e),
            None => {}
        }
    }
    (names, failures)
}

/// Why names from `debug` lack what its split DWARF units hold: one error per missing `.dwo`.
pub(crate) fn split_units_missing(debug: &std::path::Path) -> Vec<BackendError> {
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
/// made names poorer without failing the backend (a missing `.dwo`) is
/// added to `degraded`.
pub(crate) fn resolve_file(
    files: &ModuleFiles,
    addresses: &[u64],
    backend: Source,
    opts: &Options,
    degraded: &mut Vec<BackendError>,
) -> Option<Result<Vec<Option<SpanName>>, BackendError>> {
    Some(match backend {
        Source::Dwarf => dwarf::resolve_indexed(files.debug.as_ref()?, addresses, opts, degraded),
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
