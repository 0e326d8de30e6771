//! A unit's line-number program run for the four registers the sweep keeps
//! (address, file, line, column), yielding the rows `gimli`'s `LineRows` yields.
//!
//! `gimli` decodes each instruction into an enum and runs it on all twelve
//! registers; the sweep runs every line program of every unit an address
//! falls in, and that was a sixth of its time. This runner reads the bytes
//! directly, with one-byte LEB128 read inline and longer ones, and every rare
//! instruction, read by `gimli`'s own reader, so its errors and its handling
//! of tombstone addresses and overflows are `gimli`'s. Programs with more than
//! one operation per instruction (VLIW) are left to `gimli`.

use addr2line::gimli;
use gimli::Reader;

use super::R;

/// One row: the address, file index, line and column registers, and whether it ends a sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Step {
    pub(super) address: u64,
    pub(super) file: u64,
    pub(super) line: u64,
    pub(super) column: u64,
    pub(super) end_sequence: bool,
}

/// Runs the program of `header`, calling `emit` for each row `gimli` would
/// yield, in order; `None` (nothing run) where the program's encoding is one
/// this runner leaves to `gimli`.
pub(super) fn run(header: &gimli::LineProgramHeader<R<'_>>, mut emit: impl FnMut(Step)) -> Option<gimli::Result<()>> {
    let encoding = header.line_encoding();
    let address_size = header.address_size();
    if encoding.maximum_operations_per_instruction != 1 || !matches!(address_size, 1 | 2 | 4 | 8) {
        return None;
    }
    // The largest address, and the lowest taken as a tombstone (-2: gimli's `min_tombstone`).
    let ones = u64::MAX >> (64 - 8 * u32::from(address_size));
    let min_tombstone = ones - 1;
    let program = header.raw_program_buf();
    let mut input = Input { bytes: program.slice(), endian: program.endian() };
    let (opcode_base, line_range) = (header.opcode_base(), encoding.line_range);
    let (line_base, min_length) = (i64::from(encoding.line_base), u64::from(encoding.minimum_instruction_length));
    Some((|| {
        let mut state = State::START;
        while let Some(opcode) = input.next() {
            if opcode >= opcode_base {
                // A special opcode: advance line and address, then a row.
                let adjusted = opcode - opcode_base;
                state.advance_line(line_base + i64::from(adjusted % line_range));
                state.advance_address(u64::from(adjusted / line_range) * min_length, ones)?;
                state.emit(false, &mut emit);
                continue;
            }
            match gimli::DwLns(opcode) {
                gimli::DW_LNS_copy => state.emit(false, &mut emit),
                gimli::DW_LNS_advance_pc => {
                    let advance = input.uleb()?;
                    state.advance_address(min_length.wrapping_mul(advance), ones)?;
                }
                gimli::DW_LNS_advance_line => {
                    let increment = input.with_reader(|r| r.read_sleb128())?;
                    state.advance_line(increment);
                }
                gimli::DW_LNS_set_file => state.file = input.uleb()?,
                gimli::DW_LNS_set_column => state.column = input.uleb()?,
                gimli::DW_LNS_set_isa => {
                    input.uleb()?;
                }
                gimli::DW_LNS_negate_stmt
                | gimli::DW_LNS_set_basic_block
                | gimli::DW_LNS_set_prologue_end
                | gimli::DW_LNS_set_epilogue_begin => {}
                gimli::DW_LNS_const_add_pc => {
                    let advance = u64::from((255 - opcode_base) / line_range) * min_length;
                    state.advance_address(advance, ones)?;
                }
                gimli::DW_LNS_fixed_advance_pc => {
                    let advance = input.with_reader(|r| r.read_u16())?;
                    state.advance_address(u64::from(advance), ones)?;
                }
                _ if opcode == 0 => {
                    // An extended opcode, its length first.
                    let length = input.uleb()?;
                    let mut rest = input.split(length)?;
                    match gimli::DwLne(rest.read_u8()?) {
                        gimli::DW_LNE_end_sequence => {
                            state.emit(true, &mut emit);
                            state = State::START;
                        }
                        gimli::DW_LNE_set_address => {
                            // As gimli: an address below the last, or at the top of the
                            // address space, is a tombstone; rows until the next address are dropped.
                            let address = rest.read_address(address_size)?;
                            state.tombstone = address < state.address || address >= min_tombstone;
                            if !state.tombstone {
                                state.address = address;
                            }
                        }
                        gimli::DW_LNE_define_file if header.version() <= 4 => {
                            // Checked as gimli checks it; the sweep names files from the header.
                            rest.read_null_terminated_slice()?;
                            for _ in 0..3 {
                                rest.read_uleb128()?;
                            }
                        }
                        gimli::DW_LNE_set_discriminator => {
                            rest.read_uleb128()?;
                        }
                        _ => {}
                    }
                }
                _ => {
                    // A standard opcode this reader does not know: its argument count from the header.
                    let mut lengths = *header.standard_opcode_lengths();
                    lengths.skip(usize::from(opcode - 1))?;
                    for _ in 0..lengths.read_u8()? {
                        input.uleb()?;
                    }
                }
            }
        }
        Ok(())
    })())
}

/// The registers kept, and whether the address is a tombstone.
struct State {
    address: u64,
    file: u64,
    line: u64,
    column: u64,
    tombstone: bool,
}

impl State {
    /// At the start of a sequence (DWARF 5, 6.2.2).
    const START: State = State { address: 0, file: 1, line: 1, column: 0, tombstone: false };

    fn emit(&self, end_sequence: bool, emit: &mut impl FnMut(Step)) {
        if !self.tombstone {
            let (address, file, line, column) = (self.address, self.file, self.line, self.column);
            emit(Step { address, file, line, column, end_sequence });
        }
    }

    /// A line advance, saturating at 0 going down and wrapping going up (as gimli).
    fn advance_line(&mut self, increment: i64) {
        self.line = if increment < 0 {
            self.line.saturating_sub(increment.unsigned_abs())
        } else {
            self.line.wrapping_add(increment as u64)
        };
    }

    /// An address advance; past the largest address (`ones`) is an error, as in gimli.
    fn advance_address(&mut self, advance: u64, ones: u64) -> gimli::Result<()> {
        if !self.tombstone {
            self.address =
                self.address.checked_add(advance).filter(|&a| a <= ones).ok_or(gimli::Error::AddressOverflow)?;
        }
        Ok(())
    }
}

/// The program's bytes still to run.
struct Input<'a> {
    bytes: &'a [u8],
    endian: gimli::RunTimeEndian,
}

impl<'a> Input<'a> {
    fn next(&mut self) -> Option<u8> {
        let (&first, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(first)
    }

    /// An unsigned LEB128: one byte read here, longer ones by gimli.
    fn uleb(&mut self) -> gimli::Result<u64> {
        match self.bytes.split_first() {
            Some((&byte, rest)) if byte < 0x80 => {
                self.bytes = rest;
                Ok(u64::from(byte))
            }
            _ => self.with_reader(|r| r.read_uleb128()),
        }
    }

    /// `read` on a gimli reader over the bytes left, consuming what it read.
    fn with_reader<T>(&mut self, read: impl FnOnce(&mut R<'a>) -> gimli::Result<T>) -> gimli::Result<T> {
        let mut reader = R::new(self.bytes, self.endian);
        let value = read(&mut reader);
        self.bytes = if value.is_ok() { reader.slice() } else { &[] };
        value
    }

    /// The next `length` bytes as a reader of their own.
    fn split(&mut self, length: u64) -> gimli::Result<R<'a>> {
        let length = usize::try_from(length).map_err(|_| gimli::Error::UnsupportedOffset)?;
        self.with_reader(|r| r.split(length))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unit of this test binary (a real ELF with the DWARF rustc and
    /// the linked C objects wrote): the rows this runner yields are gimli's.
    #[test]
    fn every_row_is_the_row_gimli_yields() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(exe).unwrap();
        let object = object::File::parse(&*data).unwrap();
        let endian = if object::Object::is_little_endian(&object) {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<R<'_>, ()> {
            let bytes = object::Object::section_by_name(&object, id.name())
                .and_then(|s| object::ObjectSection::data(&s).ok())
                .unwrap_or(&[]);
            Ok(R::new(bytes, endian))
        };
        let dwarf = gimli::Dwarf::load(load).unwrap();
        let (mut units, mut rows) = (dwarf.units(), 0usize);
        while let Some(header) = units.next().unwrap() {
            let unit = dwarf.unit(header).unwrap();
            let Some(program) = unit.line_program.clone() else { continue };
            let mut ours = Vec::new();
            run(program.header(), |step| ours.push(step)).unwrap().unwrap();
            let mut theirs = Vec::new();
            let mut gimli_rows = program.rows();
            while let Some((_, row)) = gimli_rows.next_row().unwrap() {
                theirs.push(Step {
                    address: row.address(),
                    file: row.file_index(),
                    line: row.line().map_or(0, |l| l.get()),
                    column: match row.column() {
                        gimli::ColumnType::LeftEdge => 0,
                        gimli::ColumnType::Column(c) => c.get(),
                    },
                    end_sequence: row.end_sequence(),
                });
            }
            assert_eq!(ours, theirs);
            rows += ours.len();
        }
        assert!(rows > 10_000, "{rows} rows");
    }
}
