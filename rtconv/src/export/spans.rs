//! A dump's spans as rows of the `spans` table: each with its depth, its
//! parent's id, its self time and whether a call of its function is open
//! around it, found from the open path as the spans come in start order.
//!
//! A row is written in place as its span starts (all of it is known then but
//! its self time, which its children's starts take from its duration), so the
//! rows of a batch are in start order as they are gathered. A batch is handed
//! on when it holds [`BATCH_ROWS`] finished rows; the rows of spans still open
//! then (at most the call path's) are carried to the end of the batch they
//! end in.

use std::collections::HashMap;
use std::sync::Arc;

use super::DumpColumns;
use super::columns::{Batch, Column};
use crate::model::{Anomalies, LostChildren, SpanNs, Timeline};
use crate::stats::{DumpTotals, Totals};

/// Finished rows a batch holds when it is handed on (56 bytes a row as the walk writes it, about 60
/// in its columns): a data page's, so that the Parquet writer encodes a dump's batch as its page
/// without copying it.
pub const BATCH_ROWS: usize = super::PAGE_ROWS;

/// A span's row as the walk writes it: all but the columns its thread and function give (`tid`,
/// `thread_name`, `file`, `line`), which come from those as the batch is handed on.
#[derive(Clone, Copy)]
struct Row {
    span_id: u64,
    /// The parent's id, where `flags` has [`PARENT`].
    parent: u64,
    start_ns: i64,
    duration_ns: i64,
    self_ns: i64,
    thread: u32,
    /// The index of its function's name in [`NameColumns::functions`].
    function: u32,
    depth: u32,
    flags: u8,
}

/// [`Row::flags`]: it has a parent.
const PARENT: u8 = 1;
/// [`Row::flags`]: a call of the same function is open around it (the `recursive` column; so are
/// the next four, formats/PARQUET.md).
const RECURSIVE: u8 = 1 << 1;
/// [`Row::flags`]: still running when the dump was taken.
const OPEN: u8 = 1 << 2;
/// [`Row::flags`]: left by a `longjmp` or an exception without its exit.
const UNWOUND: u8 = 1 << 3;
/// [`Row::flags`]: cut at its parent's end.
const CLAMPED: u8 = 1 << 4;
/// [`Row::flags`]: began before the oldest span its ring kept.
const MISSING_CHILDREN: u8 = 1 << 5;

/// Takes out the rows at `holes` (ascending), moving the rest up.
fn remove_rows(rows: &mut Vec<Row>, holes: &[usize]) {
    let Some(&first) = holes.first() else { return };
    let mut to = first;
    for (k, &hole) in holes.iter().enumerate() {
        let end = holes.get(k + 1).copied().unwrap_or(rows.len());
        rows.copy_within(hole + 1..end, to);
        to += end - hole - 1;
    }
    rows.truncate(to);
}

/// Where an open span's row is.
#[derive(Clone, Copy)]
enum Slot {
    /// In the batch being gathered, at this index.
    Here(usize),
    /// Carried out of a batch handed on while it was open: in `Walk::carried`, at this index.
    Carried(usize),
}

/// A span on the open path.
struct Open {
    span: SpanNs,
    slot: Slot,
    id: u64,
    depth: u32,
    children_ns: i64,
}

/// Per dump: its functions' names and files, each once, as dictionary values.
struct NameColumns {
    /// Per key index: its name's index in `functions`.
    of_key: Vec<u32>,
    functions: Arc<[String]>,
    /// Per name: the index of its file in `files` (the first key of that name's), and its line.
    file_of: Vec<Option<u32>>,
    files: Arc<[String]>,
    lines: Vec<Option<u32>>,
}

impl NameColumns {
    fn new(tl: &Timeline<'_>) -> NameColumns {
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut file_index: HashMap<String, u32> = HashMap::new();
        let (mut names, mut file_of, mut files, mut lines, mut of_key) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (k, &key) in tl.keys.iter().enumerate() {
            let name = tl.name(k);
            let id = *index.entry(name).or_insert_with(|| {
                let place = tl.names.get(key);
                names.push(name.to_owned());
                file_of.push(place.and_then(|p| p.file.clone()).map(|file| {
                    *file_index.entry(file.clone()).or_insert_with(|| {
                        files.push(file);
                        (files.len() - 1) as u32
                    })
                }));
                lines.push(place.and_then(|p| p.line));
                (names.len() - 1) as u32
            });
            of_key.push(id);
        }
        NameColumns { of_key, functions: names.into(), file_of, files: files.into(), lines }
    }
}

/// A dump's spans on their way to rows: the batch being gathered, the open path, and the rows
/// of open spans carried out of batches handed on.
struct Walk<'d> {
    dump: &'d DumpColumns,
    names: NameColumns,
    thread_names: Arc<[String]>,
    tids: Vec<u64>,
    /// The rows of the batch being gathered, in start order (its buffer kept from batch to batch).
    rows: Vec<Row>,
    /// The batch handed on, its columns' buffers refilled from batch to batch.
    batch: Batch,
    path: Vec<Open>,
    /// How many of the path's spans have their row in `rows` (`Slot::Here`).
    open_here: usize,
    /// Rows carried out of batches handed on while their spans were open, in start order; with
    /// whether their span has ended since.
    carried: Vec<(Row, bool)>,
    /// Carried rows whose span has ended: they go at the end of the next batch.
    ended: usize,
    /// Per key index: calls of it open on the path.
    active: Vec<u32>,
    next_id: u64,
    /// Realtime less monotonic nanoseconds.
    realtime_offset: i128,
    totals: Totals,
}

impl Walk<'_> {
    /// Rows finished and not handed on yet.
    fn finished(&self) -> usize {
        self.rows.len() - self.open_here + self.ended
    }

    /// Starts span `s` of thread `thread`: its row, and its time taken from its parent's self time.
    #[inline(always)] // once per span
    fn start(&mut self, s: &SpanNs, thread: u32, missing_children: bool) {
        let duration = s.exit_ns.saturating_sub(s.enter_ns);
        let (parent, depth, parent_key) = match self.path.last_mut() {
            Some(p) => {
                p.children_ns = p.children_ns.saturating_add(duration);
                (p.id, p.depth + 1, Some(p.span.key_index))
            }
            None => (0, 0, None),
        };
        let key = s.key_index as usize;
        let recursive = self.active.get(key).is_some_and(|&a| a > 0);
        if let Some(a) = self.active.get_mut(key) {
            *a += 1;
        }
        self.totals.span(s, parent_key, !recursive, missing_children);
        let flag = |on: bool, flag: u8| if on { flag } else { 0 };
        self.rows.push(Row {
            span_id: self.next_id,
            parent,
            start_ns: realtime(self.realtime_offset, s.enter_ns),
            duration_ns: duration,
            self_ns: duration,
            thread,
            function: self.names.of_key.get(key).copied().unwrap_or(0),
            depth,
            flags: flag(parent_key.is_some(), PARENT)
                | flag(recursive, RECURSIVE)
                | flag(s.open(), OPEN)
                | flag(s.unwound(), UNWOUND)
                | flag(s.clamped(), CLAMPED)
                | flag(missing_children, MISSING_CHILDREN),
        });
        self.path.push(Open {
            span: *s,
            slot: Slot::Here(self.rows.len() - 1),
            id: self.next_id,
            depth,
            children_ns: 0,
        });
        self.open_here += 1;
        self.next_id += 1;
    }

    /// Ends the innermost open span: its self time, now that its children have started.
    fn end(&mut self) {
        let Some(o) = self.path.pop() else { return };
        if let Some(a) = self.active.get_mut(o.span.key_index as usize) {
            *a = a.saturating_sub(1);
        }
        let duration = o.span.exit_ns.saturating_sub(o.span.enter_ns);
        let self_ns = duration.saturating_sub(o.children_ns).max(0);
        match o.slot {
            Slot::Here(i) => {
                if let Some(row) = self.rows.get_mut(i) {
                    row.self_ns = self_ns;
                }
                self.open_here -= 1;
            }
            Slot::Carried(i) => {
                if let Some((row, ended)) = self.carried.get_mut(i) {
                    row.self_ns = self_ns;
                    *ended = true;
                }
                self.ended += 1;
            }
        }
    }

    /// The finished rows as a batch: those of open spans carried out, those carried before that
    /// have ended since put at its end.
    fn hand_on(&mut self) -> &mut Batch {
        let mut carried = Vec::new();
        let mut holes = Vec::new();
        for o in &mut self.path {
            let row = match o.slot {
                Slot::Carried(i) => self.carried[i].0,
                Slot::Here(i) => {
                    holes.push(i);
                    self.rows[i]
                }
            };
            o.slot = Slot::Carried(carried.len());
            carried.push((row, false));
        }
        remove_rows(&mut self.rows, &holes);
        self.rows.extend(self.carried.iter().filter(|(_, ended)| *ended).map(|(row, _)| *row));
        (self.carried, self.open_here, self.ended) = (carried, 0, 0);
        self.refill();
        self.rows.clear();
        &mut self.batch
    }

    /// Refills the batch's columns from the rows gathered.
    fn refill(&mut self) {
        let fields = super::schema::spans().len();
        if self.batch.len() != fields {
            // Taken by the last batch's consumer: made again.
            self.batch = super::columns::placeholders(fields);
        }
        let (dump, columns) = self.batch.split_at_mut(DumpColumns::SHARED);
        self.dump.refill(dump, self.rows.len());
        let [tid, thread, function, file, line, depth, span_id, parent, start_ns, duration_ns, self_ns, flags @ ..] =
            columns
        else {
            unreachable!("the spans table's columns")
        };
        let names = &self.names;
        let (tids, threads) = (tid.refill::<u64>(), thread.refill_words(&self.thread_names));
        let (functions, files, lines) =
            (function.refill_words(&names.functions), file.refill_words(&names.files), line.refill::<u32>());
        let (depths, ids, parents) = (depth.refill::<u32>(), span_id.refill::<u64>(), parent.refill::<u64>());
        let (starts, durations, selfs) =
            (start_ns.refill::<i64>(), duration_ns.refill::<i64>(), self_ns.refill::<i64>());
        let mut flags: Vec<&mut Vec<bool>> = flags.iter_mut().map(Column::refill::<bool>).collect();
        let mut roots = false;
        // A run of rows at a time, so that each is read from the cache, not from memory, for all
        // the columns it goes into.
        for rows in self.rows.chunks(1024) {
            let function_of = |r: &Row| r.function as usize;
            tids.extend(rows.iter().map(|r| self.tids.get(r.thread as usize).copied().unwrap_or(0)));
            threads.extend(rows.iter().map(|r| r.thread));
            functions.extend(rows.iter().map(|r| r.function));
            files.extend(rows.iter().map(|r| names.file_of.get(function_of(r)).copied().flatten().unwrap_or(0)));
            lines.extend(rows.iter().map(|r| names.lines.get(function_of(r)).copied().flatten().unwrap_or(0)));
            depths.extend(rows.iter().map(|r| r.depth));
            ids.extend(rows.iter().map(|r| r.span_id));
            parents.extend(rows.iter().map(|r| r.parent));
            roots |= rows.iter().fold(false, |any, r| any | (r.flags & PARENT == 0));
            starts.extend(rows.iter().map(|r| r.start_ns));
            durations.extend(rows.iter().map(|r| r.duration_ns));
            selfs.extend(rows.iter().map(|r| r.self_ns));
            for (column, flag) in flags.iter_mut().zip([RECURSIVE, OPEN, UNWOUND, CLAMPED, MISSING_CHILDREN]) {
                column.extend(rows.iter().map(|r| r.flags & flag != 0));
            }
        }
        // A validity only where a row has no value.
        fn has<'a>(rows: &'a [Row], values: &'a [Option<u32>]) -> Option<impl Iterator<Item = bool> + 'a> {
            let has = |r: &Row| values.get(r.function as usize).copied().flatten().is_some();
            (values.contains(&None) && !rows.iter().all(has)).then(|| rows.iter().map(has))
        }
        let rows = &self.rows;
        file.set_valid(has(rows, &names.file_of));
        line.set_valid(has(rows, &names.lines));
        parent.set_valid(roots.then(|| rows.iter().map(|r| r.flags & PARENT != 0)));
    }
}

/// Writes `tl`'s spans as `spans` rows, a batch of at most [`BATCH_ROWS`]
/// at a time, through `emit`; returns what its spans had wrong.
pub fn write<E>(
    tl: &Timeline<'_>,
    dump: &DumpColumns,
    emit: &mut dyn FnMut(&mut Batch) -> Result<(), E>,
) -> Result<Anomalies, E> {
    write_and_total(tl, dump, emit).map(|(found, _)| found)
}

/// [`write()`], and the dump's per-function figures (what [`crate::stats::totals`] gives) from the
/// same walk.
pub fn write_and_total<E>(
    tl: &Timeline<'_>,
    dump: &DumpColumns,
    emit: &mut dyn FnMut(&mut Batch) -> Result<(), E>,
) -> Result<(Anomalies, DumpTotals), E> {
    walk(tl, dump, BATCH_ROWS, emit)
}

/// [`write_and_total`], handing batches on at `batch_rows` finished rows.
pub(super) fn walk<E>(
    tl: &Timeline<'_>,
    dump: &DumpColumns,
    batch_rows: usize,
    emit: &mut dyn FnMut(&mut Batch) -> Result<(), E>,
) -> Result<(Anomalies, DumpTotals), E> {
    let threads = &tl.trace.threads;
    let mut walk = Walk {
        dump,
        names: NameColumns::new(tl),
        thread_names: threads
            .iter()
            .map(|t| if t.name.is_empty() { format!("thread {}", t.tid) } else { t.name.clone() })
            .collect(),
        tids: threads.iter().map(|t| t.tid).collect(),
        // A batch's rows and those of the spans open around them (a call path of up to 1,024
        // without growing the buffer, which would copy it into one twice its size), or the
        // dump's if fewer: a small dump's batch allocates no more.
        rows: Vec::with_capacity(
            (batch_rows + 1024).min(threads.iter().map(|t| t.span_count() as usize).sum::<usize>() + 1),
        ),
        batch: Vec::new(),
        path: Vec::new(),
        open_here: 0,
        carried: Vec::new(),
        ended: 0,
        active: vec![0; tl.keys.len()],
        next_id: 0,
        realtime_offset: tl.timebase.realtime_ns(0),
        totals: Totals::new(tl),
    };
    let mut decoder = tl.threads();
    while let Some(mut t) = decoder.next() {
        let lost: LostChildren = tl.lost_children(&threads[t.thread]);
        let thread = t.thread as u32;
        while let Some(batch) = t.next_batch() {
            for s in batch {
                while walk.path.last().is_some_and(|o| !o.span.encloses(s)) {
                    walk.end();
                    if walk.finished() >= batch_rows {
                        emit(walk.hand_on())?;
                    }
                }
                walk.start(s, thread, lost.of(s));
            }
        }
        while !walk.path.is_empty() {
            walk.end();
            if walk.finished() >= batch_rows {
                emit(walk.hand_on())?;
            }
        }
    }
    if walk.finished() > 0 {
        emit(walk.hand_on())?;
    }
    let found = decoder.anomalies();
    Ok((found, walk.totals.finish(tl)))
}

/// A span's start in realtime nanoseconds (Unix epoch), as Chrome's metadata states the trace's
/// start, from its monotonic start and the timebase's `offset` between the two.
#[inline(always)]
fn realtime(offset: i128, mono_ns: i64) -> i64 {
    let ns = offset + i128::from(mono_ns);
    i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::Host;
    use crate::export::columns::Values;
    use crate::model::test_dumps::{TestRing, nested, records, with_rings};

    /// The rows of `batch` by column name, in `span_id` order.
    fn rows_by_id(batches: &[Batch]) -> Vec<Vec<String>> {
        let fields = crate::export::schema::spans();
        let id = fields.iter().position(|f| f.name == "span_id").unwrap();
        let mut rows: Vec<(u64, Vec<String>)> = Vec::new();
        for batch in batches {
            for i in 0..crate::export::columns::rows(batch) {
                let Values::U64(ids) = &batch[id].values else { panic!("span_id is u64") };
                rows.push((ids[i], batch.iter().map(|c| c.text(i)).collect()));
            }
        }
        rows.sort_by_key(|r| r.0);
        rows.into_iter().map(|r| r.1).collect()
    }

    #[test]
    fn rows_of_spans_open_across_batches_come_whole_with_the_batch_they_end_in() {
        // Two threads of random call trees up to 40 deep, keys 0..5, one with spans open at the dump.
        let ring = |seed| {
            let mut spans = nested(seed, 3_000, false);
            for (i, s) in spans.iter_mut().enumerate() {
                s.key_index = (i % 5) as u32;
            }
            records(&spans)
        };
        let rings = [
            TestRing { records: ring(7), written: 3_000, dropped: 0, open: vec![(1, 0), (2, 1)] },
            TestRing { records: ring(8), written: 3_000, dropped: 0, open: Vec::new() },
        ];
        with_rings(&rings, 1 << 40, |tl| {
            let dump = DumpColumns::new(tl, "t.rtd", Host(None));
            let run = |batch_rows| {
                let mut batches = Vec::new();
                let (_, totals) = walk::<()>(tl, &dump, batch_rows, &mut |b| {
                    batches.push(std::mem::take(b));
                    Ok(())
                })
                .unwrap();
                (batches, totals)
            };
            let (whole, totals) = run(1 << 20);
            assert_eq!(whole.len(), 1);
            let (small, small_totals) = run(97);
            let sizes: Vec<usize> = small.iter().map(|b| crate::export::columns::rows(b)).collect();
            assert!(sizes[..sizes.len() - 1].iter().all(|&n| n == 97), "{sizes:?}");
            assert_eq!(sizes.iter().sum::<usize>(), 6_002);
            assert_eq!(rows_by_id(&small), rows_by_id(&whole));
            // Within a batch, start order but for the rows carried to its end.
            let id = crate::export::schema::spans().iter().position(|f| f.name == "span_id").unwrap();
            for batch in &small {
                let Values::U64(ids) = &batch[id].values else { panic!("span_id is u64") };
                assert!(ids.windows(2).filter(|w| w[1] < w[0]).count() <= 1, "{ids:?}");
            }
            // The figures of the walk are `stats`' own.
            let (stats, _) = crate::stats::totals(tl, false, false);
            let figures = |t: crate::stats::DumpTotals| {
                let mut rows: Vec<_> =
                    t.functions.into_iter().map(|(name, s)| format!("{:?}", s.row(name, 0))).collect();
                rows.sort();
                (t.total_ns, rows)
            };
            let stats = figures(stats);
            assert_eq!(figures(totals), stats);
            assert_eq!(figures(small_totals), stats);
        });
    }
}
