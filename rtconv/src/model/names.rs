//! The names of a trace's keys, as plain data: what every output shows for
//! a span. `symbolize` fills them in; the model and the renderers only read.

use std::collections::BTreeMap;

/// One function in an inline chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Function name.
    pub function: String,
    /// Source file, when known.
    pub file: Option<String>,
    /// Source line, when known.
    pub line: Option<u32>,
    /// Source column, when known (0: the line as a whole, as DWARF says it).
    pub column: Option<u32>,
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
    /// Source column, when known (DWARF's; `rtconv symbolize` shows it as llvm-symbolizer does).
    pub column: Option<u32>,
    /// Which backend named it.
    pub source: Source,
    /// The functions the innermost one was inlined into, innermost first.
    pub inlined_into: Vec<Frame>,
}

impl SpanName {
    /// The name whose frames are `chain`, innermost first (`None` if it is empty).
    pub fn from_chain(mut chain: Vec<Frame>, source: Source) -> Option<SpanName> {
        if chain.is_empty() {
            return None;
        }
        let innermost = chain.remove(0);
        Some(SpanName {
            name: innermost.function,
            file: innermost.file,
            line: innermost.line,
            column: innermost.column,
            source,
            inlined_into: chain,
        })
    }
}

/// Where a name came from: one of `symbolize`'s backends, or none.
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
    /// The backends, in the order of their names on the command line.
    pub const BACKENDS: [Source; 6] =
        [Source::Packed, Source::Site, Source::Dwarf, Source::Symtab, Source::Dladdr, Source::Addr2line];

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

    /// The backend called `name` ([`name`](Self::name)'s inverse over [`BACKENDS`](Self::BACKENDS)).
    pub fn from_name(name: &str) -> Option<Source> {
        Self::BACKENDS.into_iter().find(|s| s.name() == name)
    }

    /// Whether it reads the module's files (the others read only the dump).
    pub fn reads_files(self) -> bool {
        matches!(self, Source::Dwarf | Source::Symtab | Source::Addr2line)
    }
}

/// Every key's name, found by binary search among the trace's sorted keys:
/// a key costs its slot (a [`SpanName`] and the key), not a hash table's
/// entry with its spare capacity. A key that is not the trace's has none.
#[derive(Debug, Default)]
pub struct Names {
    keys: Vec<u64>,
    names: Vec<SpanName>,
}

impl Names {
    /// `names[i]` names `keys[i]`; the keys are sorted and distinct
    /// (`Trace::keys`), and there are as many names as keys.
    pub fn new(keys: Vec<u64>, names: Vec<SpanName>) -> Self {
        debug_assert!(keys.is_sorted_by(|a, b| a < b), "keys sorted and distinct");
        debug_assert_eq!(keys.len(), names.len(), "a name per key");
        Names { keys, names }
    }

    /// The name of `key`, if it is one of the trace's.
    pub fn get(&self, key: u64) -> Option<&SpanName> {
        self.keys.binary_search(&key).ok().and_then(|i| self.names.get(i))
    }

    /// How many keys each backend named, and how many none did.
    pub fn counts(&self) -> Vec<(Source, usize)> {
        let mut counts: BTreeMap<Source, usize> = BTreeMap::new();
        for n in &self.names {
            *counts.entry(n.source).or_default() += 1;
        }
        counts.into_iter().collect()
    }
}
