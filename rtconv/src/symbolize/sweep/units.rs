//! The compilation units of a file and the address ranges that say which
//! addresses each holds, found as `addr2line::Context` finds them.

use addr2line::gimli;
use gimli::AttributeValue;

use super::R;
use super::lines::Lines;

/// One compilation unit.
pub(super) struct UnitInfo<'a> {
    pub(super) offset: usize,
    pub(super) unit: gimli::Unit<R<'a>>,
    pub(super) lang: Option<gimli::DwLang>,
}

/// An address range of a unit, as `addr2line` orders them.
struct UnitRange {
    unit: usize,
    min_begin: u64,
    range: gimli::Range,
}

/// Every unit, and the ranges that say which addresses each holds.
pub(super) struct Units<'a> {
    pub(super) units: Vec<UnitInfo<'a>>,
    ranges: Vec<UnitRange>,
}

/// A unit's low/high pc, size or range list.
#[derive(Default)]
pub(super) struct RangeAttributes {
    low_pc: Option<u64>,
    high_pc: Option<u64>,
    size: Option<u64>,
    ranges_offset: Option<gimli::RangeListsOffset<usize>>,
}

impl RangeAttributes {
    /// Reads one attribute, if it is a range attribute.
    pub(super) fn read<'a>(
        &mut self,
        unit: gimli::UnitRef<'_, R<'a>>,
        attr: &gimli::Attribute<R<'a>>,
    ) -> gimli::Result<bool> {
        // By name first: an attribute's value is worked out only for the three read here.
        match attr.name() {
            at @ (gimli::DW_AT_low_pc | gimli::DW_AT_high_pc | gimli::DW_AT_ranges) => {
                self.set(unit, at, attr.value())?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Takes `value`, of the range attribute `at`.
    pub(super) fn set<'a>(
        &mut self,
        unit: gimli::UnitRef<'_, R<'a>>,
        at: gimli::DwAt,
        value: AttributeValue<R<'a>>,
    ) -> gimli::Result<()> {
        match (at, value) {
            (gimli::DW_AT_low_pc, AttributeValue::Addr(v)) => self.low_pc = Some(v),
            (gimli::DW_AT_low_pc, AttributeValue::DebugAddrIndex(i)) => self.low_pc = Some(unit.address(i)?),
            (gimli::DW_AT_high_pc, AttributeValue::Addr(v)) => self.high_pc = Some(v),
            (gimli::DW_AT_high_pc, AttributeValue::DebugAddrIndex(i)) => self.high_pc = Some(unit.address(i)?),
            (gimli::DW_AT_high_pc, AttributeValue::Udata(v)) => self.size = Some(v),
            (gimli::DW_AT_ranges, value) => self.ranges_offset = unit.attr_ranges_offset(value)?,
            _ => {}
        }
        Ok(())
    }

    /// Calls `f` with each non-empty range; whether there was one.
    pub(super) fn for_each(
        &self,
        unit: gimli::UnitRef<'_, R<'_>>,
        mut f: impl FnMut(gimli::Range),
    ) -> gimli::Result<bool> {
        let mut any = false;
        let mut add = |range: gimli::Range| {
            if range.begin < range.end {
                f(range);
                any = true;
            }
        };
        if let Some(offset) = self.ranges_offset {
            let mut list = unit.ranges(offset)?;
            while let Some(range) = list.next()? {
                add(range);
            }
        } else if let (Some(begin), Some(end)) = (self.low_pc, self.high_pc) {
            add(gimli::Range { begin, end });
        } else if let (Some(begin), Some(size)) = (self.low_pc, self.size) {
            add(gimli::Range { begin, end: begin.wrapping_add(size) });
        }
        Ok(any)
    }
}

impl<'a> Units<'a> {
    /// The units and their ranges, as `addr2line::Context` finds them
    /// (`DW_AT_ranges`, else `.debug_aranges`, else low/high pc, else the line
    /// table's sequences); `None` if a unit is a split DWARF skeleton.
    pub(super) fn parse(dwarf: &gimli::Dwarf<R<'a>>) -> gimli::Result<Option<Units<'a>>> {
        let mut aranges = Vec::new();
        let mut headers = dwarf.debug_aranges.headers();
        while let Some(header) = headers.next()? {
            aranges.push((header.debug_info_offset().0, header.offset()));
        }
        aranges.sort_unstable_by_key(|i| i.0);
        let (mut units, mut ranges) = (Vec::new(), Vec::new());
        let mut headers = dwarf.units();
        while let Some(header) = headers.next()? {
            let id = units.len();
            let Some(offset) = header.debug_info_offset() else { continue };
            let mut need_range = match header.type_() {
                gimli::UnitType::Type { .. } | gimli::UnitType::SplitType { .. } => continue,
                gimli::UnitType::Partial => false,
                _ => true,
            };
            let Ok(unit) = dwarf.unit(header) else { continue };
            if unit.dwo_id.is_some() {
                return Ok(None);
            }
            let unit_ref = gimli::UnitRef::new(dwarf, &unit);
            let mut lang = None;
            if need_range {
                let mut entries = unit_ref.entries_raw(None)?;
                let Some(abbrev) = entries.read_abbreviation()? else { continue };
                let mut attrs = RangeAttributes::default();
                for spec in abbrev.attributes() {
                    let attr = entries.read_attribute(*spec)?;
                    if !attrs.read(unit_ref, &attr)?
                        && attr.name() == gimli::DW_AT_language
                        && let AttributeValue::Language(l) = attr.value()
                    {
                        lang = Some(l);
                    }
                }
                let first = match attrs.ranges_offset {
                    Some(_) => None,
                    None => aranges.binary_search_by_key(&offset.0, |x| x.0).ok(),
                };
                if let Some(mut i) = first {
                    while i > 0 && aranges[i - 1].0 == offset.0 {
                        i -= 1;
                    }
                    for (_, at) in aranges[i..].iter().take_while(|x| x.0 == offset.0) {
                        let mut entries = dwarf.debug_aranges.header(*at)?.entries();
                        while let Some(arange) = entries.next().transpose() {
                            let Ok(arange) = arange else { continue };
                            if arange.length() != 0 {
                                ranges.push(UnitRange { range: arange.range(), unit: id, min_begin: 0 });
                                need_range = false;
                            }
                        }
                    }
                }
                if need_range {
                    need_range = !attrs.for_each(unit_ref, |range| {
                        ranges.push(UnitRange { range, unit: id, min_begin: 0 });
                    })?;
                }
            }
            if need_range && let Ok(Some(lines)) = Lines::parse(unit_ref) {
                for s in &lines.sequences {
                    ranges.push(UnitRange {
                        range: gimli::Range { begin: s.start, end: s.end },
                        unit: id,
                        min_begin: 0,
                    });
                }
            }
            units.push(UnitInfo { offset: offset.0, unit, lang });
        }
        ranges.sort_unstable_by_key(|i| (i.range.end, i.unit));
        let mut min = !0;
        for r in ranges.iter_mut().rev() {
            min = min.min(r.range.begin);
            r.min_begin = min;
        }
        Ok(Some(Units { units, ranges }))
    }

    /// The units holding `probe`, in the order `addr2line` tries them.
    pub(super) fn find(&self, probe: u64) -> impl Iterator<Item = usize> + '_ {
        let high = probe + 1;
        let pos = match self.ranges.binary_search_by_key(&probe, |i| i.range.end) {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        self.ranges[pos..]
            .iter()
            .take_while(move |i| high > i.min_begin)
            .filter(move |i| probe < i.range.end && high > i.range.begin)
            .map(|i| i.unit)
    }

    /// The unit holding the `.debug_info` offset `at`.
    pub(super) fn containing(&self, at: usize) -> Option<usize> {
        match self.units.binary_search_by_key(&at, |u| u.offset) {
            Ok(_) | Err(0) => None,
            Err(i) => Some(i - 1),
        }
    }
}
