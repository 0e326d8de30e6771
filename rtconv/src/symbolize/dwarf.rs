//! Names from a module's DWARF line and inline info, or its symbol table.

use std::path::{Path, PathBuf};

use object::Object as _;

use super::{Source, SpanName};

/// Why a module's binary cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    /// The file is not there.
    #[error("binary {} not found; pass --exe PATH (the file the dump was recorded from)", path.display())]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The file is there but could not be read or parsed.
    #[error("binary {} cannot be read: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file is a different build from the one that was recorded.
    #[error(
        "binary {} has build-id {found} but the dump recorded {expected}; pass the right build with --exe, \
         or --allow-mismatch to use this one anyway",
        path.display()
    )]
    BuildIdMismatch {
        /// The file.
        path: PathBuf,
        /// Build-id in the dump.
        expected: String,
        /// Build-id of the file.
        found: String,
    },
}

/// An opened module: its DWARF context and symbol table.
pub struct DwarfModule {
    loader: addr2line::Loader,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl DwarfModule {
    /// Opens `path`, checking its build-id against `expected` (if the dump recorded one).
    pub fn open(path: &Path, expected: &[u8], allow_mismatch: bool) -> Result<Self, ModuleError> {
        if !path.exists() {
            return Err(ModuleError::Missing { path: path.into() });
        }
        let unreadable = |reason: String| ModuleError::Unreadable { path: path.into(), reason };
        let bytes = crate::load::map_file(path).map_err(|e| unreadable(e.to_string()))?;
        let file = object::File::parse(&*bytes).map_err(|e| unreadable(e.to_string()))?;
        let found = file.build_id().ok().flatten().unwrap_or_default();
        if !expected.is_empty() && !found.is_empty() && found != expected && !allow_mismatch {
            return Err(ModuleError::BuildIdMismatch { path: path.into(), expected: hex(expected), found: hex(found) });
        }
        let loader = addr2line::Loader::new(path).map_err(|e| unreadable(e.to_string()))?;
        Ok(DwarfModule { loader })
    }

    /// The innermost function at `file_address`, with its file and line;
    /// from the symbol table when there is no DWARF for it.
    ///
    /// DWARF built with `line-tables-only` names functions without their
    /// path (`fib`). When the address is not inside an inlined call, the
    /// symbol table's name for it is the same function with its full path
    /// (`workload::fib`), and is used instead, as GNU addr2line does.
    pub fn resolve(&self, file_address: u64) -> Option<SpanName> {
        if let Ok(mut frames) = self.loader.find_frames(file_address)
            && let Ok(Some(frame)) = frames.next()
            && let Some(function) = frame.function.as_ref().and_then(|f| f.demangle().ok())
        {
            let inlined = matches!(frames.next(), Ok(Some(_)));
            let location = frame.location.as_ref();
            let mut name = function.into_owned();
            if !inlined
                && let Some(full) = self.symbol_name(file_address)
                && full.len() > name.len()
                && full.ends_with(&name)
                && full[..full.len() - name.len()].ends_with("::")
            {
                name = full;
            }
            return Some(SpanName {
                name,
                file: location.and_then(|l| l.file).map(str::to_owned),
                line: location.and_then(|l| l.line),
                source: Source::Dwarf,
            });
        }
        let name = self.symbol_name(file_address)?;
        Some(SpanName { name, file: None, line: None, source: Source::Symtab })
    }

    /// The demangled symbol-table name of the function holding `file_address`.
    fn symbol_name(&self, file_address: u64) -> Option<String> {
        let symbol = self.loader.find_symbol(file_address)?;
        Some(addr2line::demangle_auto(symbol.into(), None).into_owned())
    }
}
