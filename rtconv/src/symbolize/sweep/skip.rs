//! Stepping over the entries a sweep does not read, with a plan made once
//! per abbreviation.

use addr2line::gimli;

use super::R;

/// How to step over an entry's attributes, made once per abbreviation of a
/// unit: the attributes of known size summed into one step (most entries
/// are skipped in one), the others read as their form says.
#[derive(Default)]
pub(super) struct SkipPlans {
    steps: Vec<Step>,
    /// Per abbreviation code: its steps in `steps` (`None`: not made yet).
    by_code: Vec<Option<(u32, u32)>>,
}

#[derive(Clone, Copy)]
enum Step {
    Bytes(usize),
    Form(gimli::DwForm),
}

/// Abbreviation codes above this are planned each time, not kept (codes are
/// numbered from 1; producers number them densely).
pub(super) const MAX_PLANNED_CODE: u64 = 1 << 16;

impl SkipPlans {
    pub(super) fn clear(&mut self) {
        self.steps.clear();
        self.by_code.clear();
    }

    /// Steps over the attributes of an entry with abbreviation `abbrev` (code `code`).
    pub(super) fn skip(
        &mut self,
        input: &mut R<'_>,
        header: &gimli::UnitHeader<R<'_>>,
        code: u64,
        abbrev: &gimli::Abbreviation,
    ) -> gimli::Result<()> {
        let planned = usize::try_from(code).ok().filter(|_| code <= MAX_PLANNED_CODE);
        let (start, len) = match planned.and_then(|c| self.by_code.get(c).copied().flatten()) {
            Some(plan) => plan,
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
                let plan = (start as u32, (self.steps.len() - start) as u32);
                if let Some(c) = planned {
                    if self.by_code.len() <= c {
                        self.by_code.resize(c + 1, None);
                    }
                    self.by_code[c] = Some(plan);
                }
                plan
            }
        };
        for &step in &self.steps[start as usize..(start + len) as usize] {
            match step {
                Step::Bytes(n) => gimli::Reader::skip(input, n)?,
                Step::Form(form) => skip_form(input, form, header)?,
            }
        }
        if planned.is_none() {
            self.steps.truncate(start as usize);
        }
        Ok(())
    }
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
