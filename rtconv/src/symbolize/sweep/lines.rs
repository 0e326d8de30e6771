//! A unit's line table, kept as `addr2line` keeps it (the same row for an
//! address), and its files rendered as `addr2line` renders them.

use addr2line::gimli;

use super::R;
use super::line_program::{self, Step};

/// A unit's line table: its sequences' rows, and its files as named.
#[derive(Default)]
pub(super) struct Lines {
    pub(super) sequences: Vec<Sequence>,
    rows: Vec<Row>,
}

pub(super) struct Sequence {
    pub(super) start: u64,
    pub(super) end: u64,
    rows: std::ops::Range<usize>,
}

#[derive(Clone, Copy)]
pub(super) struct Row {
    address: u64,
    pub(super) file: u64,
    pub(super) line: u32,
    /// 0: none (the line's left edge, as DWARF says it).
    pub(super) column: u32,
}

impl Lines {
    pub(super) fn parse(unit: gimli::UnitRef<'_, R<'_>>) -> gimli::Result<Option<Lines>> {
        let mut lines = Lines::default();
        Ok(lines.parse_into(unit)?.then_some(lines))
    }

    /// Reads `unit`'s line table into `self` (its buffers reused); whether it has one.
    pub(super) fn parse_into(&mut self, unit: gimli::UnitRef<'_, R<'_>>) -> gimli::Result<bool> {
        let Some(program) = unit.line_program.clone() else { return Ok(false) };
        self.sequences.clear();
        self.rows.clear();
        let mut first = 0;
        let mut keep = |step: Step| self.keep(&mut first, step);
        if let Some(ran) = line_program::run(program.header(), &mut keep) {
            ran?;
        } else {
            let mut rows = program.rows();
            while let Some((_, row)) = rows.next_row()? {
                let line = row.line().map_or(0, std::num::NonZeroU64::get);
                let (address, file, end_sequence) = (row.address(), row.file_index(), row.end_sequence());
                let column = match row.column() {
                    gimli::ColumnType::LeftEdge => 0,
                    gimli::ColumnType::Column(c) => c.get(),
                };
                keep(Step { address, file, line, column, end_sequence });
            }
        }
        self.sequences.sort_unstable_by_key(|s| s.start);
        Ok(true)
    }

    /// Keeps one row of the program, as `addr2line` keeps it: a sequence
    /// ends at its end row (and is dropped when empty), and a row at the
    /// address of the one before replaces it. `first` is where the open
    /// sequence's rows start.
    fn keep(&mut self, first: &mut usize, step: Step) {
        let all = &mut self.rows;
        if step.end_sequence {
            if let Some(start) = all.get(*first).map(|r| r.address) {
                if start < step.address {
                    self.sequences.push(Sequence { start, end: step.address, rows: *first..all.len() });
                } else {
                    all.truncate(*first);
                }
            }
            *first = all.len();
            return;
        }
        let (address, file, line, column) = (step.address, step.file, step.line as u32, step.column as u32);
        if all.len() > *first
            && let Some(last) = all.last_mut()
            && last.address == address
        {
            (last.file, last.line, last.column) = (file, line, column);
            return;
        }
        all.push(Row { address, file, line, column });
    }

    /// The row whose range holds `probe` (as `addr2line` finds it).
    pub(super) fn find(&self, probe: u64) -> Option<Row> {
        let s = self.sequences.binary_search_by(|s| super::place(s.start, s.end, probe)).ok()?;
        let rows = &self.rows[self.sequences[s].rows.clone()];
        let i = match rows.binary_search_by(|r| r.address.cmp(&probe)) {
            Ok(i) => i,
            Err(0) => return None,
            Err(i) => i - 1,
        };
        Some(rows[i])
    }
}

pub(super) fn render_file<'a>(
    unit: gimli::UnitRef<'_, R<'a>>,
    file: &gimli::FileEntry<R<'a>>,
    header: &gimli::LineProgramHeader<R<'a>>,
) -> gimli::Result<String> {
    let mut path = match unit.comp_dir {
        Some(dir) => gimli::Reader::to_string_lossy(&dir)?.into_owned(),
        None => String::new(),
    };
    if file.directory_index() != 0
        && let Some(directory) = file.directory(header)
    {
        path_push(&mut path, &gimli::Reader::to_string_lossy(&unit.attr_string(directory)?)?);
    }
    path_push(&mut path, &gimli::Reader::to_string_lossy(&unit.attr_string(file.path_name())?)?);
    Ok(path)
}

fn path_push(path: &mut String, p: &str) {
    let forward_root = |p: &str| p.starts_with('/') || p.get(1..3) == Some(":/");
    let backward_root = |p: &str| p.starts_with('\\') || p.get(1..3) == Some(":\\");
    if forward_root(p) || backward_root(p) {
        *path = p.to_string();
    } else {
        let separator = if backward_root(path) { '\\' } else { '/' };
        if !path.is_empty() && !path.ends_with(separator) {
            path.push(separator);
        }
        *path += p;
    }
}
