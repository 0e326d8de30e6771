//! Names as shown: each entry's name found once by `addr2line`'s rule,
//! each raw name demangled once, each file rendered once.

use addr2line::gimli;
use gimli::AttributeValue;
use rustc_hash::FxHashMap;

use super::super::dwarf_common::NameCache;
use super::lines::render_file;
use super::units::Units;
use super::{R, UnitOffset};

/// Names as shown, each made once.
pub(super) struct Naming<'d, 'a> {
    pub(super) dwarf: &'d gimli::Dwarf<R<'a>>,
    pub(super) units: &'d Units<'a>,
    /// Names of entries reached through `DW_AT_abstract_origin`/`DW_AT_specification`.
    pub(super) referenced: FxHashMap<(usize, UnitOffset), Option<R<'a>>>,
    /// Shown names, and the ids of raw names (by where they are, and the language they are read in).
    pub(super) shown: Vec<Box<str>>,
    pub(super) ids: FxHashMap<(usize, usize, Option<u16>), u32>,
    /// Files as rendered, by unit and file index.
    pub(super) files: FxHashMap<(usize, u64), Option<u32>>,
    pub(super) file_names: Vec<Box<str>>,
    /// Symbols' names as shown, by symbol address.
    pub(super) symbols: FxHashMap<u64, u32>,
    pub(super) cache: NameCache,
}

impl<'d, 'a> Naming<'d, 'a> {
    fn unit_ref(&self, unit: usize) -> gimli::UnitRef<'d, R<'a>> {
        gimli::UnitRef::new(self.dwarf, &self.units.units[unit].unit)
    }

    /// The shown name of an entry with these name attributes (in their
    /// order), by `addr2line`'s rule: its linkage name, else its name, else
    /// (when met before either) the name of the entry its abstract origin or
    /// specification names.
    pub(super) fn entry(&mut self, unit: usize, attrs: &[(gimli::DwAt, AttributeValue<R<'a>>)]) -> Option<u32> {
        let lang = self.units.units[unit].lang.map(|l| l.0);
        self.entry_raw(unit, attrs).map(|raw| self.shown_id(raw, lang))
    }

    /// As [`Naming::entry`], the name as the file has it.
    pub(super) fn entry_raw(&mut self, unit: usize, attrs: &[(gimli::DwAt, AttributeValue<R<'a>>)]) -> Option<R<'a>> {
        let unit_ref = self.unit_ref(unit);
        let mut name = None;
        for &(at, value) in attrs {
            match at {
                gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                    if let Ok(v) = unit_ref.attr_string(value) {
                        name = Some(v);
                    }
                }
                gimli::DW_AT_name if name.is_none() => name = unit_ref.attr_string(value).ok(),
                _ if name.is_none() => name = self.referenced_name(unit, value, 16),
                _ => {}
            }
        }
        name
    }

    /// The id of `raw` as shown, demangled by `lang`.
    pub(super) fn shown_id(&mut self, raw: R<'a>, lang: Option<u16>) -> u32 {
        let key = (raw.slice().as_ptr() as usize, raw.len(), lang);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let text = gimli::Reader::to_string_lossy(&raw).unwrap_or_default();
        let id = self.shown.len() as u32;
        self.shown.push(self.cache.name(&text, lang).into());
        self.ids.insert(key, id);
        id
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
        if let Some(name) = self.referenced.get(&(unit, offset)) {
            return *name;
        }
        let name = self.referenced_entry_name(unit, offset, limit);
        self.referenced.insert((unit, offset), name);
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

    /// File `index` of `unit`'s line table, rendered as `addr2line` renders it.
    pub(super) fn file(&mut self, unit: usize, index: u64) -> Option<String> {
        let id = match self.files.get(&(unit, index)) {
            Some(id) => *id,
            None => {
                let unit_ref = self.unit_ref(unit);
                let rendered = unit_ref.line_program.as_ref().and_then(|program| {
                    let header = program.header();
                    match header.file(index) {
                        Some(file) => render_file(unit_ref, file, header).ok(),
                        None if index == 0 => Some(String::new()),
                        None => None,
                    }
                });
                let id = rendered.map(|r| {
                    self.file_names.push(r.into());
                    (self.file_names.len() - 1) as u32
                });
                self.files.insert((unit, index), id);
                id
            }
        };
        id.map(|id| self.file_names[id as usize].to_string())
    }

    /// A symbol's name as shown.
    pub(super) fn symbol(&mut self, (address, raw): (u64, &str)) -> String {
        let id = match self.symbols.get(&address) {
            Some(&id) => id,
            None => {
                let id = self.shown.len() as u32;
                self.shown.push(self.cache.name(raw, None).into());
                self.symbols.insert(address, id);
                id
            }
        };
        self.shown[id as usize].to_string()
    }
}
