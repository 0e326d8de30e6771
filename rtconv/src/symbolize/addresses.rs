//! Naming addresses in binaries, as addr2line and llvm-symbolizer do (what
//! `rtconv symbolize` answers; reading and printing its queries is the
//! command line's).
//!
//! A [`Query`] is a module and an address in it, placed in the file as
//! [`Lookup`] says. Queries asked one at a time ([`Session`]) keep each
//! module's DWARF context and symbol table open between them, so a caller
//! that asks and waits (a debugger, a log filter) gets each answer at once.
//! Batches ([`name_batch`]) go through the backends' parallel resolvers.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::index::Index;
use super::{ModuleFiles, Options, dwarf, each_backend, external, symtab};
use crate::model::{Source, SpanName};

/// How the addresses asked are read before they are looked up.
#[derive(Clone, Debug, Default)]
pub struct Lookup {
    /// Addresses are offsets into this section (`-j`).
    pub section: Option<String>,
    /// Addresses are relative to the image base, the lowest address a
    /// loadable segment asks for (`--relative-address`).
    pub relative: bool,
    /// Subtracted from every address before it is looked up, as if the file
    /// had been loaded that much higher (`--adjust-vma`).
    pub adjust_vma: u64,
}

/// One query: the module and the address as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The binary (or debug file) the address is in.
    pub module: PathBuf,
    /// The address as asked (see [`Lookup`] for how it is placed in the file).
    pub address: u64,
}

/// What a module's file says about placing addresses in it.
#[derive(Debug, Default)]
struct Layout {
    /// The lowest virtual address of a loadable segment.
    image_base: u64,
    /// Section name to its address.
    sections: HashMap<String, u64>,
}

impl Layout {
    fn read(path: &Path) -> Layout {
        use object::{Object, ObjectSection, ObjectSegment};
        let Ok(bytes) = crate::io::map_file(path, crate::io::Pages::OnDemand) else { return Layout::default() };
        let Ok(file) = object::File::parse(&*bytes) else { return Layout::default() };
        let image_base = file.segments().map(|s| s.address()).min().unwrap_or(0);
        let sections =
            file.sections().filter_map(|s| Some((s.name().ok()?.to_string(), s.address()))).collect::<HashMap<_, _>>();
        Layout { image_base, sections }
    }

    /// The file address `lookup` makes of `address`, or why there is none.
    fn file_address(&self, lookup: &Lookup, address: u64) -> Result<u64, String> {
        let mut a = address;
        if let Some(name) = &lookup.section {
            let start = self.sections.get(name).ok_or_else(|| format!("no section {name:?}"))?;
            a = a.wrapping_add(*start);
        }
        if lookup.relative {
            a = a.wrapping_add(self.image_base);
        }
        Ok(a.wrapping_sub(lookup.adjust_vma))
    }
}

/// A module's DWARF context, and its code's address ranges.
type OpenDwarf = (dwarf::Worker, Option<Vec<Range<u64>>>);

/// One module, opened on its first query; its DWARF and symbols are read
/// on the first address its index cannot answer.
struct Module {
    files: ModuleFiles,
    layout: Layout,
    index: Option<Index>,
    /// Not yet opened; opened (`None`: it could not be).
    dwarf: Option<Option<OpenDwarf>>,
    symtab: Option<Option<symtab::Table>>,
}

/// Queries answered one at a time, each module's lookup state kept between
/// them. What DWARF answers is added to each build's index when the session
/// ends ([`finish`](Self::finish), or dropped).
pub struct Session {
    opts: Options,
    lookup: Lookup,
    modules: HashMap<PathBuf, Result<Module, String>>,
    /// Why a backend failed or gave poorer names than the build's: names
    /// were lost. To be said once each.
    pub warnings: Vec<String>,
    /// What is worth saying but lost no name (the symbol index could not be used).
    pub notes: Vec<String>,
}

impl Session {
    /// A session naming with `opts`' backends (those that read files), addresses read as `lookup` says.
    pub fn new(opts: Options, lookup: Lookup) -> Self {
        Session { opts, lookup, modules: HashMap::new(), warnings: Vec::new(), notes: Vec::new() }
    }

    /// The name of `query`'s address, or why it cannot be looked up. What
    /// went wrong on the way without losing the answer is added to
    /// [`warnings`](Self::warnings) (a backend that failed) or
    /// [`notes`](Self::notes) (the index).
    pub fn name(&mut self, query: &Query) -> Result<Option<SpanName>, String> {
        self.open_once(&query.module);
        let (opts, warnings) = (&self.opts, &mut self.warnings);
        let Some(module) = self.modules.get_mut(&query.module) else { return Ok(None) };
        let module = module.as_mut().map_err(|e| e.clone())?;
        let address = module.layout.file_address(&self.lookup, query.address)?;
        let mut name = [None];
        each_backend(&opts.backends(), &mut name, |backend, _| {
            vec![match backend {
                Source::Dwarf => module.dwarf_name(address, opts, warnings),
                Source::Symtab => module.symtab(warnings).and_then(|t| t.name(address, opts.demangle)),
                Source::Addr2line => opts.addr2line.as_ref().and_then(|program| {
                    let debug = module.files.debug.as_deref().unwrap_or(&module.files.binary);
                    match external::resolve(program, debug, &[address], opts.demangle) {
                        Ok(mut names) => names.pop().flatten(),
                        Err(e) => {
                            warnings.push(e.to_string());
                            None
                        }
                    }
                }),
                _ => None,
            }]
        });
        let [name] = name;
        Ok(name)
    }

    /// The data symbol covering `query`'s address (a `DATA` query), or why it cannot be looked up.
    pub fn data(&mut self, query: &Query) -> Result<Option<symtab::DataSymbol>, String> {
        self.open_once(&query.module);
        let Some(module) = self.modules.get_mut(&query.module) else { return Ok(None) };
        let module = module.as_mut().map_err(|e| e.clone())?;
        let address = module.layout.file_address(&self.lookup, query.address)?;
        Ok(module.symtab(&mut self.warnings).and_then(|t| t.data(address, self.opts.demangle)))
    }

    /// Ends the session: what DWARF answered is added to each build's
    /// index; returns the [`notes`](Self::notes) not yet taken, with what
    /// could not be written.
    pub fn finish(mut self) -> Vec<String> {
        let mut notes = std::mem::take(&mut self.notes);
        self.save_indexes(&mut notes);
        notes
    }

    /// Writes what each module's index gained (once: an index saved has nothing left to add).
    fn save_indexes(&mut self, notes: &mut Vec<String>) {
        for module in self.modules.values_mut().filter_map(|m| m.as_mut().ok()) {
            if let Some(ix) = module.index.take().as_mut() {
                ix.save(notes);
            }
        }
    }

    /// Opens the module at `path` on its first query (what it could not open is kept too).
    fn open_once(&mut self, path: &Path) {
        if !self.modules.contains_key(path) {
            let opened = self.open(path);
            self.modules.insert(path.to_path_buf(), opened);
        }
    }

    fn open(&mut self, path: &Path) -> Result<Module, String> {
        let files = self.opts.search.files_for(path).map_err(|e| e.to_string())?;
        let wants_dwarf = self.opts.backends().contains(&Source::Dwarf);
        let index = match (&files.debug, &self.opts.index) {
            (Some(debug), Some(root)) if wants_dwarf => Index::open(root, debug, self.opts.demangle, &mut self.notes),
            _ => None,
        };
        Ok(Module { layout: Layout::read(&files.binary), files, index, dwarf: None, symtab: None })
    }
}

impl Module {
    /// Its symbol table, read on first use (`None`: it could not be, said in `warnings`).
    fn symtab(&mut self, warnings: &mut Vec<String>) -> Option<&mut symtab::Table> {
        let debug = self.files.debug.as_deref().unwrap_or(&self.files.binary);
        let table = self
            .symtab
            .get_or_insert_with(|| symtab::Table::open(debug).map_err(|e| warnings.push(e.to_string())).ok());
        table.as_mut()
    }

    /// DWARF's name at `address`: from the index, else from the DWARF
    /// (opened on first use), then kept in the index.
    fn dwarf_name(&mut self, address: u64, opts: &Options, warnings: &mut Vec<String>) -> Option<SpanName> {
        if let Some(known) = self.index.as_ref().and_then(|ix| ix.get(address)) {
            return known;
        }
        let debug = self.files.debug.as_deref()?;
        let opened = self.dwarf.get_or_insert_with(|| match dwarf::Worker::open(debug, opts.demangle) {
            Ok(w) => {
                let missing = super::split_units_missing(debug);
                if !missing.is_empty() {
                    // Answers without the split units are poorer than the build's: not kept.
                    self.index = None;
                }
                warnings.extend(missing.iter().map(ToString::to_string));
                Some((w, super::dwarf_common::code_ranges(debug)))
            }
            Err(e) => {
                warnings.push(e.to_string());
                None
            }
        });
        let (worker, code) = opened.as_mut()?;
        let name = worker.name(code.as_deref(), address);
        if let Some(ix) = &mut self.index {
            ix.add(address, name.as_ref());
        }
        name
    }
}

impl Drop for Session {
    /// A session dropped without [`finish`](Session::finish) still saves what it added.
    fn drop(&mut self) {
        self.save_indexes(&mut Vec::new());
    }
}

/// A batch's answers: per query, its name or why its address could not be looked up.
pub type Named = Vec<Result<Option<SpanName>, String>>;

/// What naming a batch said on the way, besides its answers.
#[derive(Debug, Default)]
pub struct BatchSaid {
    /// Backends that failed or gave poorer names than the build's: names were lost.
    pub warnings: Vec<String>,
    /// What lost no name (the symbol index could not be used or written).
    pub notes: Vec<String>,
}

/// Names a batch of queries at once, module by module, with the backends'
/// parallel resolvers: one answer per query, and what went wrong on the way.
pub fn name_batch(queries: &[Query], opts: &Options, lookup: &Lookup) -> (Named, BatchSaid) {
    let mut out: Named = vec![Ok(None); queries.len()];
    let mut said = BatchSaid::default();
    let mut by_module: HashMap<&Path, Vec<usize>> = HashMap::new();
    for (i, q) in queries.iter().enumerate() {
        by_module.entry(&q.module).or_default().push(i);
    }
    for (module, indices) in by_module {
        let files = match opts.search.files_for(module) {
            Ok(files) => files,
            Err(e) => {
                for &i in &indices {
                    out[i] = Err(e.to_string());
                }
                continue;
            }
        };
        let layout = Layout::read(&files.binary);
        let mut placed = Vec::new();
        for &i in &indices {
            match layout.file_address(lookup, queries[i].address) {
                Ok(a) => placed.push((i, a)),
                Err(e) => out[i] = Err(e),
            }
        }
        let addresses: Vec<u64> = placed.iter().map(|p| p.1).collect();
        let (names, findings) = super::resolve_module_files(&files, &addresses, opts);
        said.warnings.extend(findings.degraded.iter().map(ToString::to_string));
        said.notes.extend(findings.warnings);
        for ((i, _), name) in placed.into_iter().zip(names) {
            out[i] = Ok(name);
        }
    }
    (out, said)
}
