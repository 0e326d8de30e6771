//! What a sweep does with each entry, decided once per abbreviation of a
//! unit: read it (a function with code, an inlined call), or step over it
//! — most entries in one step of a known size. The entries it reads are
//! decoded by their plan where every attribute has a size known from the
//! abbreviation and each one read has a form of the few producers use
//! ([`Plans::fields`]); the others by gimli's attribute parser.

use addr2line::gimli;

use super::R;

/// The plans of one unit's abbreviations, by code; cleared per unit.
#[derive(Default)]
pub(super) struct Plans {
    /// Steps of the plans whose attributes are not all of a known size.
    steps: Vec<Step>,
    /// Per abbreviation code: its plan (`None`: not made yet).
    by_code: Vec<Option<Plan>>,
    /// The plans of codes too large for `by_code` (as many as the unit has abbreviations).
    sparse: rustc_hash::FxHashMap<u64, Plan>,
    /// Steps of the plans that decode their entries' attributes.
    fields: Vec<FieldStep>,
}

/// What to do with an entry.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    pub(super) kind: Kind,
    pub(super) has_children: bool,
    skip: Skip,
    /// `fields[start..start + len]`, for an entry read whose attributes all decode by plan.
    decode: Option<(u32, u32)>,
}

/// An attribute a sweep reads.
#[derive(Clone, Copy)]
pub(super) enum Field {
    /// `DW_AT_low_pc`, `DW_AT_high_pc` or `DW_AT_ranges`.
    Range(gimli::DwAt),
    /// `DW_AT_name`, a linkage name, `DW_AT_abstract_origin` or `DW_AT_specification`.
    Name(gimli::DwAt),
    CallFile,
    CallLine,
    CallColumn,
}

impl Field {
    /// The field attribute `at` is, if the sweep reads it.
    pub(super) fn of(at: gimli::DwAt) -> Option<Field> {
        match at {
            gimli::DW_AT_low_pc | gimli::DW_AT_high_pc | gimli::DW_AT_ranges => Some(Field::Range(at)),
            gimli::DW_AT_linkage_name
            | gimli::DW_AT_MIPS_linkage_name
            | gimli::DW_AT_name
            | gimli::DW_AT_abstract_origin
            | gimli::DW_AT_specification => Some(Field::Name(at)),
            gimli::DW_AT_call_file => Some(Field::CallFile),
            gimli::DW_AT_call_line => Some(Field::CallLine),
            gimli::DW_AT_call_column => Some(Field::CallColumn),
            _ => None,
        }
    }
}

/// One step of decoding an entry's attributes by plan.
#[derive(Clone, Copy)]
pub(super) enum FieldStep {
    /// Attributes not read, of this many bytes.
    Skip(usize),
    /// An attribute read, of a form [`value`] decodes.
    Read(Field, gimli::DwForm),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A function with code (`DW_AT_low_pc` or `DW_AT_ranges`).
    Function,
    /// A function without code (a declaration): its subtree is its own.
    Declaration,
    /// An inlined call.
    Inlined,
    /// Anything else.
    Other,
}

/// How to step over an entry's attributes.
#[derive(Clone, Copy)]
enum Skip {
    /// All of a known size, summed.
    Bytes(u32),
    /// `steps[start..start + len]`.
    Steps(u32, u32),
}

#[derive(Clone, Copy)]
enum Step {
    Bytes(usize),
    Form(gimli::DwForm),
}

/// Abbreviation codes above this are kept in a map, not by index (codes are
/// numbered from 1; producers number them densely).
const MAX_PLANNED_CODE: u64 = 1 << 16;

impl Plans {
    pub(super) fn clear(&mut self) {
        self.steps.clear();
        self.by_code.clear();
        self.sparse.clear();
        self.fields.clear();
    }

    /// The plan for abbreviation `code` of the unit with `header` and `abbreviations`.
    #[inline]
    pub(super) fn plan(
        &mut self,
        code: u64,
        header: &gimli::UnitHeader<R<'_>>,
        abbreviations: &gimli::Abbreviations,
    ) -> gimli::Result<Plan> {
        let dense = usize::try_from(code).ok().filter(|_| code <= MAX_PLANNED_CODE);
        let known = match dense {
            Some(c) => self.by_code.get(c).copied().flatten(),
            None => self.sparse.get(&code).copied(),
        };
        if let Some(plan) = known {
            return Ok(plan);
        }
        let abbrev = abbreviations.get(code).ok_or(gimli::Error::InvalidAbbreviationCode(code))?;
        let plan = self.make(abbrev, header);
        match dense {
            Some(c) => {
                if self.by_code.len() <= c {
                    self.by_code.resize(c + 1, None);
                }
                self.by_code[c] = Some(plan);
            }
            None => {
                self.sparse.insert(code, plan);
            }
        }
        Ok(plan)
    }

    fn make(&mut self, abbrev: &gimli::Abbreviation, header: &gimli::UnitHeader<R<'_>>) -> Plan {
        let kind = match abbrev.tag() {
            gimli::DW_TAG_subprogram
                if abbrev
                    .attributes()
                    .iter()
                    .any(|s| matches!(s.name(), gimli::DW_AT_low_pc | gimli::DW_AT_ranges)) =>
            {
                Kind::Function
            }
            gimli::DW_TAG_subprogram => Kind::Declaration,
            gimli::DW_TAG_inlined_subroutine => Kind::Inlined,
            _ => Kind::Other,
        };
        let fixed: Option<usize> = abbrev.attributes().iter().try_fold(0, |sum, spec| Some(sum + spec.size(header)?));
        let skip = match fixed.and_then(|n| u32::try_from(n).ok()) {
            Some(n) => Skip::Bytes(n),
            None => {
                let start = self.steps.len();
                for spec in abbrev.attributes() {
                    let in_plan = self.steps.len() > start;
                    match (spec.size(header), self.steps.last_mut()) {
                        (Some(n), Some(Step::Bytes(sum))) if in_plan => *sum += n,
                        (Some(n), _) => self.steps.push(Step::Bytes(n)),
                        (None, _) => self.steps.push(Step::Form(spec.form())),
                    }
                }
                Skip::Steps(start as u32, (self.steps.len() - start) as u32)
            }
        };
        let decode = match kind {
            Kind::Function | Kind::Inlined => self.plan_fields(abbrev, header),
            Kind::Declaration | Kind::Other => None,
        };
        Plan { kind, has_children: abbrev.has_children(), skip, decode }
    }

    /// The steps decoding an entry of `abbrev`, if all its attributes are of a
    /// size the abbreviation tells and each one read has a form [`value`] decodes.
    fn plan_fields(&mut self, abbrev: &gimli::Abbreviation, header: &gimli::UnitHeader<R<'_>>) -> Option<(u32, u32)> {
        let start = self.fields.len();
        for spec in abbrev.attributes() {
            let field = Field::of(spec.name());
            let size = spec.size(header);
            let in_plan = self.fields.len() > start;
            let step = match (field, size) {
                (Some(field), Some(_)) if decodes(field, spec.form(), header) => FieldStep::Read(field, spec.form()),
                (None, Some(n)) => match self.fields.last_mut() {
                    Some(FieldStep::Skip(sum)) if in_plan => {
                        *sum += n;
                        continue;
                    }
                    _ => FieldStep::Skip(n),
                },
                _ => {
                    self.fields.truncate(start);
                    return None;
                }
            };
            self.fields.push(step);
        }
        Some((start as u32, (self.fields.len() - start) as u32))
    }

    /// How to decode the attributes of an entry planned as `plan`, if by plan.
    #[inline]
    pub(super) fn fields(&self, plan: Plan) -> Option<&[FieldStep]> {
        let (start, len) = plan.decode?;
        self.fields.get(start as usize..(start + len) as usize)
    }

    /// Steps over the attributes of an entry planned as `plan`.
    #[inline]
    pub(super) fn skip(&self, input: &mut R<'_>, header: &gimli::UnitHeader<R<'_>>, plan: Plan) -> gimli::Result<()> {
        match plan.skip {
            Skip::Bytes(n) => gimli::Reader::skip(input, n as usize),
            Skip::Steps(start, len) => {
                for &step in &self.steps[start as usize..(start + len) as usize] {
                    match step {
                        Step::Bytes(n) => gimli::Reader::skip(input, n)?,
                        Step::Form(form) => skip_form(input, form, header)?,
                    }
                }
                Ok(())
            }
        }
    }
}
/// Whether [`value`] decodes `field` in `form`: what producers write for
/// them (addresses, data, section offsets, unit references, `.debug_str` offsets).
fn decodes(field: Field, form: gimli::DwForm, header: &gimli::UnitHeader<R<'_>>) -> bool {
    let data =
        matches!(form, gimli::DW_FORM_data1 | gimli::DW_FORM_data2 | gimli::DW_FORM_data4 | gimli::DW_FORM_data8);
    match field {
        Field::Range(gimli::DW_AT_low_pc) => form == gimli::DW_FORM_addr,
        Field::Range(gimli::DW_AT_high_pc) => form == gimli::DW_FORM_addr || data,
        Field::Range(_) => form == gimli::DW_FORM_sec_offset,
        Field::Name(gimli::DW_AT_abstract_origin | gimli::DW_AT_specification) => {
            matches!(form, gimli::DW_FORM_ref1 | gimli::DW_FORM_ref2 | gimli::DW_FORM_ref4 | gimli::DW_FORM_ref8)
                || (form == gimli::DW_FORM_ref_addr && header.version() >= 3)
        }
        Field::Name(_) => form == gimli::DW_FORM_strp,
        Field::CallFile | Field::CallLine | Field::CallColumn => data,
    }
}

/// The value of `field` in `form` (one [`decodes`]), read from `input`: the
/// value gimli's `Attribute::value` gives for it.
#[inline]
pub(super) fn value<'a>(
    input: &mut R<'a>,
    field: Field,
    form: gimli::DwForm,
    header: &gimli::UnitHeader<R<'a>>,
) -> gimli::Result<gimli::AttributeValue<R<'a>>> {
    use gimli::{AttributeValue as V, Reader};
    let format = header.format();
    let number = |input: &mut R<'a>| -> gimli::Result<u64> {
        Ok(match form {
            gimli::DW_FORM_data1 | gimli::DW_FORM_ref1 => u64::from(input.read_u8()?),
            gimli::DW_FORM_data2 | gimli::DW_FORM_ref2 => u64::from(input.read_u16()?),
            gimli::DW_FORM_data4 | gimli::DW_FORM_ref4 => u64::from(input.read_u32()?),
            _ => input.read_u64()?,
        })
    };
    Ok(match (field, form) {
        (Field::Range(_), gimli::DW_FORM_addr) => V::Addr(input.read_address(header.address_size())?),
        (Field::Range(_), gimli::DW_FORM_sec_offset) => {
            V::RangeListsRef(gimli::RawRangeListsOffset(input.read_offset(format)?))
        }
        (Field::Range(_), _) => V::Udata(number(input)?),
        (Field::Name(_), gimli::DW_FORM_strp) => V::DebugStrRef(gimli::DebugStrOffset(input.read_offset(format)?)),
        (Field::Name(_), gimli::DW_FORM_ref_addr) => {
            V::DebugInfoRef(gimli::DebugInfoOffset(input.read_offset(format)?))
        }
        (Field::Name(_), _) => {
            let offset = usize::try_from(number(input)?).map_err(|_| gimli::Error::UnsupportedOffset)?;
            V::UnitRef(gimli::UnitOffset(offset))
        }
        (Field::CallFile, _) => V::FileIndex(number(input)?),
        (Field::CallLine | Field::CallColumn, _) => V::Udata(number(input)?),
    })
}

/// Steps over one attribute value of a form whose size is in the data.
fn skip_form(input: &mut R<'_>, mut form: gimli::DwForm, header: &gimli::UnitHeader<R<'_>>) -> gimli::Result<()> {
    use gimli::Reader;
    loop {
        let length = match form {
            gimli::DW_FORM_indirect => {
                form = gimli::DwForm(input.read_uleb128_u16()?);
                let spec = gimli::AttributeSpecification::new(gimli::DW_AT_null, form, None);
                match spec.size(header) {
                    Some(n) => return input.skip(n),
                    None => continue,
                }
            }
            gimli::DW_FORM_block1 => usize::from(input.read_u8()?),
            gimli::DW_FORM_block2 => usize::from(input.read_u16()?),
            gimli::DW_FORM_block4 => input.read_u32()? as usize,
            gimli::DW_FORM_block | gimli::DW_FORM_exprloc => {
                usize::try_from(input.read_uleb128()?).map_err(|_| gimli::Error::UnsupportedOffset)?
            }
            gimli::DW_FORM_string => return input.read_null_terminated_slice().map(drop),
            gimli::DW_FORM_udata
            | gimli::DW_FORM_sdata
            | gimli::DW_FORM_ref_udata
            | gimli::DW_FORM_strx
            | gimli::DW_FORM_GNU_str_index
            | gimli::DW_FORM_addrx
            | gimli::DW_FORM_GNU_addr_index
            | gimli::DW_FORM_loclistx
            | gimli::DW_FORM_rnglistx => return input.skip_leb128(),
            _ => return Err(gimli::Error::UnknownForm(form)),
        };
        return input.skip(length);
    }
}
