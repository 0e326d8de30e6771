//! What both DWARF readers share — the `addr2line`-based lookups
//! (`dwarf.rs`) and the one-pass sweep (`sweep/`): which addresses are code,
//! how many a thread takes at least, and the demangled-name cache.

use std::collections::HashMap;
use std::path::Path;

/// Addresses per unit of parallel work; fewer than two runs' worth are done on one thread.
pub(crate) const MIN_PER_WORKER: usize = 256;

/// The address ranges of `debug`'s code sections (`None` if its section
/// headers cannot be read). DWARF also describes code the linker discarded,
/// at address 0 or wherever the tombstone puts it: an address outside the
/// file's code is none of its functions (GNU addr2line says `??` there too).
pub(crate) fn code_ranges(debug: &Path) -> Option<Vec<std::ops::Range<u64>>> {
    let bytes = crate::io::map_file(debug, crate::io::Pages::OnDemand).ok()?;
    code_ranges_of(&object::File::parse(&*bytes).ok()?)
}

/// As [`code_ranges`], of a file already parsed.
pub(crate) fn code_ranges_of(file: &object::File<'_>) -> Option<Vec<std::ops::Range<u64>>> {
    use object::{Object, ObjectSection, SectionFlags};
    // By the flag, not the kind: in a separate debug file the code sections hold no bytes (NOBITS).
    let executable =
        |flags| matches!(flags, SectionFlags::Elf { sh_flags, .. } if sh_flags.contains(object::elf::SHF_EXECINSTR));
    if file.format() != object::BinaryFormat::Elf {
        return None;
    }
    let code = file
        .sections()
        .filter(|s| executable(s.flags()))
        .map(|s| s.address()..s.address().saturating_add(s.size()))
        .collect();
    Some(code)
}

/// Whether names of `language` may be Itanium C++ names (a C++ language, or not said).
fn cxx_or_unknown(language: Option<u16>) -> bool {
    use addr2line::gimli;
    language.is_none_or(|l| {
        [
            gimli::DW_LANG_C_plus_plus,
            gimli::DW_LANG_C_plus_plus_03,
            gimli::DW_LANG_C_plus_plus_11,
            gimli::DW_LANG_C_plus_plus_14,
            gimli::DW_LANG_C_plus_plus_17,
            gimli::DW_LANG_C_plus_plus_20,
        ]
        .contains(&gimli::DwLang(l))
    })
}

/// `raw` demangled as `addr2line::demangle_auto` demangles it (Rust by
/// `rustc-demangle`, then C++ by `cpp_demangle`, or by `language`); `None`
/// where it does not. Rust names are written into a string sized up front,
/// not grown piece by piece as `format!` grows it (docs/PERFORMANCE.md).
fn demangle_auto(raw: &str, language: Option<u16>) -> Option<String> {
    use addr2line::gimli::{DW_LANG_C_plus_plus, DW_LANG_Rust, DwLang};
    let rust = || {
        let demangled = rustc_demangle::try_demangle(raw).ok()?;
        let mut name = String::with_capacity(2 * raw.len());
        std::fmt::Write::write_fmt(&mut name, format_args!("{demangled:#}")).ok()?;
        Some(name)
    };
    match language.map(DwLang) {
        Some(language) if language == DW_LANG_Rust => rust(),
        Some(language) => addr2line::demangle(raw, language),
        None => rust().or_else(|| addr2line::demangle(raw, DW_LANG_C_plus_plus)),
    }
}

/// Raw name to shown name, per DWARF language.
pub(crate) struct NameCache {
    demangle: bool,
    by_language: HashMap<Option<u16>, rustc_hash::FxHashMap<Box<str>, Box<str>>>,
}

impl NameCache {
    pub(crate) fn new(demangle: bool) -> Self {
        NameCache { demangle, by_language: HashMap::new() }
    }

    /// `raw` as shown: demangled by `language` (or by its look) when asked.
    pub(crate) fn name(&mut self, raw: &str, language: Option<u16>) -> String {
        if !self.demangle {
            return raw.to_string();
        }
        // A name Rust demangles is what a language-less lookup shows too (it tries Rust first).
        if language.is_none()
            && let Some(rust) = self.by_language.get(&Some(addr2line::gimli::DW_LANG_Rust.0)).and_then(|m| m.get(raw))
            && **rust != *raw
        {
            return rust.to_string();
        }
        let names = self.by_language.entry(language).or_default();
        if let Some(name) = names.get(raw) {
            return name.to_string();
        }
        let name: Box<str> = match demangle_auto(raw, language) {
            Some(name) => name.into(),
            // An Itanium name the demangler cannot read: the C++ runtime's (GNU's) reads more.
            None if cxx_or_unknown(language) => super::cxa::demangle(raw).map_or(raw.into(), Into::into),
            None => raw.into(),
        };
        names.insert(raw.into(), name.clone());
        name.into()
    }
}
