//! Naming span keys: each unique key is resolved once.
//!
//! Backends, best first: the dump's own site section ([`sites`]), then the
//! module's DWARF and symbol table ([`dwarf`]), then — when the binary is
//! missing or of another build — the dump's dladdr table ([`dladdr`]). A key
//! nothing resolves is named `?? (module+0xoffset)`.

pub mod dladdr;
pub mod dwarf;
pub mod sites;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::PathBuf;

use crate::address::{Location, locate};
use crate::load::Trace;

/// The name of one span key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanName {
    /// Function or label.
    pub name: String,
    /// Source file, when known.
    pub file: Option<String>,
    /// Source line, when known.
    pub line: Option<u32>,
    /// Which backend named it.
    pub source: Source,
}

/// Which backend named a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// A site descriptor in the dump.
    Site,
    /// DWARF debug info of the module.
    Dwarf,
    /// The module's ELF symbol table.
    Symtab,
    /// The dump's dladdr table (dynamic symbols, resolved on the target).
    Dladdr,
    /// Nothing: shown as `??`.
    Unknown,
}

/// Options for finding binaries.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The main executable to use instead of the path in the dump.
    pub exe: Option<PathBuf>,
    /// Use a binary even when its build-id differs from the dump's.
    pub allow_mismatch: bool,
}

/// A reason some keys are not named from their binary.
#[derive(Debug)]
pub struct Problem {
    /// What went wrong with the module.
    pub kind: dwarf::ModuleError,
    /// Distinct keys in the module.
    pub keys: usize,
    /// Of those, the keys the dump's dladdr table named instead.
    pub from_dladdr: usize,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {} distinct span key(s) left unnamed", self.kind, self.keys - self.from_dladdr)?;
        if self.from_dladdr > 0 {
            write!(f, ", {} named from the dump's dladdr table", self.from_dladdr)?;
        }
        Ok(())
    }
}

/// Names for every key of a trace.
#[derive(Debug, Default)]
pub struct Symbols {
    names: HashMap<u64, SpanName>,
}

impl Symbols {
    /// The name of `key` (every key of the trace has one).
    pub fn get(&self, key: u64) -> Option<&SpanName> {
        self.names.get(&key)
    }

    /// How many keys each backend named.
    pub fn counts(&self) -> Vec<(Source, usize)> {
        let mut counts: HashMap<Source, usize> = HashMap::new();
        for n in self.names.values() {
            *counts.entry(n.source).or_default() += 1;
        }
        let mut v: Vec<_> = counts.into_iter().collect();
        v.sort();
        v
    }
}

/// Resolves every distinct key of `trace`, opening each module that holds
/// one at most once.
pub fn symbolize(trace: &Trace, opts: &Options) -> (Symbols, Vec<Problem>) {
    let keys: BTreeSet<u64> = trace.threads.iter().flat_map(|t| t.spans.iter().map(|r| r.key)).collect();
    let mut by_module: HashMap<usize, Vec<(u64, u64)>> = HashMap::new();
    let mut symbols = Symbols::default();
    for &key in &keys {
        match locate(trace, key) {
            Location::Site { offset } => {
                let name = sites::resolve(trace, offset).unwrap_or_else(|| unknown(format!("site+{offset:#x}")));
                symbols.names.insert(key, name);
            }
            Location::Module { index, file_address } => by_module.entry(index).or_default().push((key, file_address)),
            Location::Unmapped => {
                symbols.names.insert(key, unknown(format!("{key:#x}")));
            }
        }
    }
    let mut problems = Vec::new();
    let mut modules: Vec<_> = by_module.into_iter().collect();
    modules.sort_by_key(|(index, _)| *index);
    for (index, addrs) in modules {
        let module = &trace.modules[index];
        let path = match (&opts.exe, module.is_main) {
            (Some(exe), true) => exe.clone(),
            _ => module.path.clone(),
        };
        let base = module.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let unknown_in = |file_address: u64| unknown(format!("{base}+{file_address:#x}"));
        match dwarf::DwarfModule::open(&path, &module.build_id, opts.allow_mismatch) {
            Ok(dm) => {
                for (key, file_address) in addrs {
                    let name = dm.resolve(file_address).unwrap_or_else(|| unknown_in(file_address));
                    symbols.names.insert(key, name);
                }
            }
            Err(kind) => {
                let mut from_dladdr = 0;
                for &(key, file_address) in &addrs {
                    let name = match dladdr::resolve(trace, key) {
                        Some(name) => {
                            from_dladdr += 1;
                            name
                        }
                        None => unknown_in(file_address),
                    };
                    symbols.names.insert(key, name);
                }
                problems.push(Problem { kind, keys: addrs.len(), from_dladdr });
            }
        }
    }
    (symbols, problems)
}

fn unknown(location: String) -> SpanName {
    SpanName { name: format!("?? ({location})"), file: None, line: None, source: Source::Unknown }
}
