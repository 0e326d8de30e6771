//! A dump's spans as rows of the `spans` table: each with its depth, its
//! parent's id, its self time and whether a call of its function is open
//! around it, found from the open path as the spans come in start order.

use std::collections::HashMap;
use std::sync::Arc;

use super::DumpColumns;
use super::columns::{Batch, Column, Values};
use crate::model::{Anomalies, LostChildren, SpanNs, Timeline};

/// Rows buffered before they are handed on as one batch (72 bytes a row in its column buffers): a
/// row group's, so that the Parquet writer takes a dump's batch as its row group without copying
/// it, and sorts each batch into start order once.
pub const BATCH_ROWS: usize = super::ROW_GROUP_ROWS;

/// The span columns of the rows not yet handed on.
#[derive(Default)]
struct Columns {
    tid: Vec<u64>,
    thread: Vec<u32>,
    function: Vec<u32>,
    depth: Vec<u32>,
    span_id: Vec<u64>,
    parent: Vec<Option<u64>>,
    start_ns: Vec<i64>,
    duration_ns: Vec<i64>,
    self_ns: Vec<i64>,
    recursive: Vec<bool>,
    open: Vec<bool>,
    unwound: Vec<bool>,
    clamped: Vec<bool>,
    missing_children: Vec<bool>,
}

impl Columns {
    /// Empties every column, keeping its buffer for the next batch.
    fn clear(&mut self) {
        let Columns {
            tid,
            thread,
            function,
            depth,
            span_id,
            parent,
            start_ns,
            duration_ns,
            self_ns,
            recursive,
            open,
            unwound,
            clamped,
            missing_children,
        } = self;
        tid.clear();
        thread.clear();
        function.clear();
        depth.clear();
        span_id.clear();
        parent.clear();
        start_ns.clear();
        duration_ns.clear();
        self_ns.clear();
        recursive.clear();
        open.clear();
        unwound.clear();
        clamped.clear();
        missing_children.clear();
    }
}

/// A span on the open path: its row so far and its children's time.
struct Open {
    span: SpanNs,
    id: u64,
    parent: Option<u64>,
    depth: u32,
    children_ns: i64,
    recursive: bool,
    missing_children: bool,
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

/// Writes `tl`'s spans as `spans` rows, a batch of at most [`BATCH_ROWS`]
/// at a time, through `emit`; returns what its spans had wrong.
pub fn write<E>(
    tl: &Timeline<'_>,
    dump: &DumpColumns,
    emit: &mut dyn FnMut(Batch) -> Result<(), E>,
) -> Result<Anomalies, E> {
    let names = NameColumns::new(tl);
    let thread_names: Arc<[String]> = tl
        .trace
        .threads
        .iter()
        .map(|t| if t.name.is_empty() { format!("thread {}", t.tid) } else { t.name.clone() })
        .collect();
    let mut rows = Columns::default();
    let mut next_id = 0u64;
    let mut path: Vec<Open> = Vec::new();
    // Per key index: calls of it open on the path.
    let mut active = vec![0u32; tl.keys.len()];
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let thread = &tl.trace.threads[t.thread];
        let lost: LostChildren = tl.lost_children(thread);
        let (tid, thread_index) = (thread.tid, t.thread as u32);
        let close = |o: Open, rows: &mut Columns, active: &mut [u32]| {
            if let Some(a) = active.get_mut(o.span.key_index as usize) {
                *a = a.saturating_sub(1);
            }
            let duration = o.span.exit_ns.saturating_sub(o.span.enter_ns);
            rows.tid.push(tid);
            rows.thread.push(thread_index);
            rows.function.push(names.of_key.get(o.span.key_index as usize).copied().unwrap_or(0));
            rows.depth.push(o.depth);
            rows.span_id.push(o.id);
            rows.parent.push(o.parent);
            rows.start_ns.push(realtime(tl, o.span.enter_ns));
            rows.duration_ns.push(duration);
            rows.self_ns.push(duration.saturating_sub(o.children_ns).max(0));
            rows.recursive.push(o.recursive);
            rows.open.push(o.span.open());
            rows.unwound.push(o.span.unwound());
            rows.clamped.push(o.span.clamped());
            rows.missing_children.push(o.missing_children);
        };
        while let Some(batch) = t.next_batch() {
            for s in batch {
                while path.last().is_some_and(|o| !o.span.encloses(s)) {
                    if let Some(o) = path.pop() {
                        close(o, &mut rows, &mut active);
                    }
                }
                let (parent, depth) = match path.last_mut() {
                    Some(p) => {
                        p.children_ns = p.children_ns.saturating_add(s.exit_ns.saturating_sub(s.enter_ns));
                        (Some(p.id), p.depth + 1)
                    }
                    None => (None, 0),
                };
                let recursive = active.get(s.key_index as usize).is_some_and(|&a| a > 0);
                if let Some(a) = active.get_mut(s.key_index as usize) {
                    *a += 1;
                }
                let missing_children = lost.of(s);
                path.push(Open { span: *s, id: next_id, parent, depth, children_ns: 0, recursive, missing_children });
                next_id += 1;
                if rows.tid.len() >= BATCH_ROWS {
                    emit(batch_of(&mut rows, dump, &names, &thread_names))?;
                }
            }
        }
        while let Some(o) = path.pop() {
            close(o, &mut rows, &mut active);
        }
    }
    if !rows.tid.is_empty() {
        emit(batch_of(&mut rows, dump, &names, &thread_names))?;
    }
    Ok(threads.anomalies())
}

/// `rows` (gathered as their spans end) in their spans' start order, which their ids follow:
/// ids, parents and starts then grow by small steps, which Parquet's delta encoding stores in a
/// few bits.
fn in_start_order(rows: &Columns) -> Columns {
    let order = start_order(&rows.span_id);
    fn take<T: Copy>(values: &[T], order: &[u32]) -> Vec<T> {
        order.iter().map(|&i| values[i as usize]).collect()
    }
    Columns {
        tid: take(&rows.tid, &order),
        thread: take(&rows.thread, &order),
        function: take(&rows.function, &order),
        depth: take(&rows.depth, &order),
        span_id: take(&rows.span_id, &order),
        parent: take(&rows.parent, &order),
        start_ns: take(&rows.start_ns, &order),
        duration_ns: take(&rows.duration_ns, &order),
        self_ns: take(&rows.self_ns, &order),
        recursive: take(&rows.recursive, &order),
        open: take(&rows.open, &order),
        unwound: take(&rows.unwound, &order),
        clamped: take(&rows.clamped, &order),
        missing_children: take(&rows.missing_children, &order),
    }
}

/// The indices of `ids` (distinct) in the order of their values. A batch's ids lie within a few
/// times its length of its highest but those of the spans that began before the batch's others
/// (at most the depth of the call tree at its start): those are placed in one pass, the others
/// sorted and put first.
fn start_order(ids: &[u64]) -> Vec<u32> {
    let Some(&high) = ids.iter().max() else {
        return Vec::new();
    };
    let low = high.saturating_sub(4 * ids.len() as u64);
    let mut before: Vec<u32> = Vec::new();
    let mut at = vec![u32::MAX; (high - low) as usize + 1];
    for (i, &id) in ids.iter().enumerate() {
        match at.get_mut(id.wrapping_sub(low) as usize) {
            Some(slot) if id >= low => *slot = i as u32,
            _ => before.push(i as u32),
        }
    }
    before.sort_unstable_by_key(|&i| ids[i as usize]);
    before.extend(at.into_iter().filter(|&i| i != u32::MAX));
    before
}

/// A span's start in realtime nanoseconds (Unix epoch), as Chrome's metadata states the trace's start.
fn realtime(tl: &Timeline<'_>, mono_ns: i64) -> i64 {
    let ns = tl.timebase.realtime_ns(i128::from(mono_ns));
    i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
}

/// The rows buffered in `rows` as one batch (and `rows` emptied).
fn batch_of(rows: &mut Columns, dump: &DumpColumns, names: &NameColumns, thread_names: &Arc<[String]>) -> Batch {
    let c = in_start_order(rows);
    rows.clear();
    let n = c.tid.len();
    let file_keys: Vec<Option<u32>> =
        c.function.iter().map(|&f| names.file_of.get(f as usize).copied().flatten()).collect();
    let lines: Vec<Option<u32>> = c.function.iter().map(|&f| names.lines.get(f as usize).copied().flatten()).collect();
    let mut columns = dump.columns(n);
    columns.extend([
        Column::new(Values::U64(c.tid)),
        Column::new(Values::Words { words: thread_names.clone(), keys: c.thread }),
        Column::new(Values::Words { words: names.functions.clone(), keys: c.function }),
        Column::options(&file_keys, |keys| Values::Words { words: names.files.clone(), keys }),
        Column::options(&lines, Values::U32),
        Column::new(Values::U32(c.depth)),
        Column::new(Values::U64(c.span_id)),
        Column::options(&c.parent, Values::U64),
        Column::new(Values::I64(c.start_ns)),
        Column::new(Values::I64(c.duration_ns)),
        Column::new(Values::I64(c.self_ns)),
        Column::new(Values::Bool(c.recursive)),
        Column::new(Values::Bool(c.open)),
        Column::new(Values::Bool(c.unwound)),
        Column::new(Values::Bool(c.clamped)),
        Column::new(Values::Bool(c.missing_children)),
    ]);
    columns
}

#[cfg(test)]
mod tests {
    use super::start_order;

    #[test]
    fn start_order_sorts_ids_near_and_far_below_the_highest() {
        // Ids within the window, ids far below it (spans that began long before), and none.
        let ids: Vec<u64> = vec![1_000_004, 7, 1_000_001, 1_000_000, 3, 1_000_003, 999_990];
        let order = start_order(&ids);
        let sorted: Vec<u64> = order.iter().map(|&i| ids[i as usize]).collect();
        let mut expected = ids.clone();
        expected.sort_unstable();
        assert_eq!(sorted, expected);
        assert!(start_order(&[]).is_empty());
        assert_eq!(start_order(&[5]), vec![0]);
    }
}
