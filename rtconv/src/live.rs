//! A live capture — a wire stream arriving from a probe's RTT server, a
//! serial port or a growing file — converted as it arrives.
//!
//! Design constraints:
//! - Bytes are fed as they come ([`Live::feed`]); a format that can be
//!   written in parts (Perfetto's protobuf, ftrace text: see
//!   [`convert::writes_parts`]) gets each part at [`Live::flush`], the spans
//!   that came since the last, so the output is complete and valid after
//!   every part; the others (Chrome JSON, statistics, …) are written once, at
//!   [`Live::finish`], from everything that came.
//! - Nothing is lost silently: [`Live::finish`] states what the link lost
//!   and what the target dropped, as a converted stream file would.
//! - Spans arrive in their tracks' exit order: a span whose children came in
//!   an earlier part is written in its own part — as a slice that
//!   trace_processor nests by time, as one ftrace line with its duration.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rtconv::convert::Format;
//! use rtconv::live::Live;
//! use std::io::Read;
//!
//! let opts = rtconv::symbolize::Options::default();
//! let filter = rtconv::model::Filter::default();
//! let mut live = Live::new("tcp://127.0.0.1:19021".into(), Format::Perfetto, &opts, &filter);
//! let mut out = std::fs::File::create("live.pftrace")?;
//! let mut socket = std::net::TcpStream::connect("127.0.0.1:19021")?;
//! let mut buf = [0u8; 4096];
//! while !live.ended() {
//!     let n = socket.read(&mut buf)?;
//!     if n == 0 { break }
//!     live.feed(&buf[..n]);
//!     live.flush(&mut out)?;
//! }
//! let report = live.finish(false, &mut out)?;
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::PathBuf;

use ringtrace_format::Record;

use crate::convert::{self, ConvertError, Diagnostic, Format, Input, Level, Parts, Report};
use crate::model::Filter;
use crate::symbolize;
use crate::wire_file::{self, WireReader};

/// A live capture being converted.
pub struct Live<'a> {
    /// How messages name the capture (`tcp://…`, `-`, a file).
    name: PathBuf,
    reader: WireReader,
    format: Format,
    opts: &'a symbolize::Options,
    filter: &'a Filter,
    cache: symbolize::Cache,
    parts: Parts,
    /// Spans kept for a format written at the end, by track.
    kept: BTreeMap<u64, Vec<Record>>,
    /// The parts' reports, merged.
    report: Report,
    said: HashSet<String>,
}

impl<'a> Live<'a> {
    /// A capture named `name` in messages, converted into `format`.
    pub fn new(name: PathBuf, format: Format, opts: &'a symbolize::Options, filter: &'a Filter) -> Self {
        Live {
            name,
            reader: WireReader::new(),
            format,
            opts,
            filter,
            cache: symbolize::Cache::default(),
            parts: Parts::default(),
            kept: BTreeMap::new(),
            report: Report::default(),
            said: HashSet::new(),
        }
    }

    /// Reads the capture's next bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.reader.feed(bytes);
    }

    /// Whether the stream said it ended (each of its tracks sent its end frame).
    pub fn ended(&self) -> bool {
        self.reader.ended()
    }

    /// The reader, for its counts.
    pub fn reader(&self) -> &WireReader {
        &self.reader
    }

    /// Writes the spans that came since the last call as the next part of the output (a format
    /// written at the end keeps them). Nothing is written before an info frame came.
    pub fn flush(&mut self, out: &mut dyn Write) -> Result<(), ConvertError> {
        if self.reader.info().is_none() {
            return Ok(());
        }
        let batch = self.reader.take();
        if !convert::writes_parts(self.format) {
            for (id, records) in batch {
                self.kept.entry(id).or_default().extend(records);
            }
            return Ok(());
        }
        if batch.values().all(Vec::is_empty) {
            return Ok(());
        }
        let bytes = wire_file::dump_of(&self.reader, &batch, &[], false).map_err(wire_error(&self.name))?;
        let input = Input::new(&self.name, &bytes, self.opts, self.filter, &self.cache);
        let part = convert::convert_part(input, self.format, &mut self.parts, out)?;
        self.report.spans += part.spans;
        self.report.threads = self.report.threads.max(part.threads);
        self.report.filtered += part.filtered;
        for d in part.diagnostics {
            // A part's note on the filter counts that part: the end states the whole.
            if d.level != Level::Note && self.said.insert(d.message.clone()) {
                self.report.diagnostics.push(d);
            }
        }
        Ok(())
    }

    /// Ends the capture — `by_user` (Ctrl-C), or because the source closed or the stream ended:
    /// the last part, or the whole output of a format written at the end; returns the report,
    /// with what the link lost and what the target dropped. A stream whose source closed before
    /// its end was cut (an error: exit 3); one the user stopped, merely not ended.
    pub fn finish(mut self, by_user: bool, out: &mut dyn Write) -> Result<Report, ConvertError> {
        self.flush(out)?;
        let losses = self.reader.losses();
        if !convert::writes_parts(self.format) {
            let bytes = wire_file::dump_of(&self.reader, &self.kept, &losses, true).map_err(wire_error(&self.name))?;
            let cache = symbolize::Cache::default();
            return convert::convert_bytes(
                Input::new(&self.name, &bytes, self.opts, self.filter, &cache),
                self.format,
                out,
            );
        }
        let shown = self.name.display().to_string();
        if self.reader.info().is_none() {
            return Err(wire_error(&self.name)(wire_file::WireFileError::NoInfo));
        }
        for note in self.reader.notes() {
            self.report.diagnostics.push(Diagnostic::warning(format!("{shown}: {note}")));
        }
        for loss in losses {
            self.report.diagnostics.push(Diagnostic::error(format!("{shown}: {loss}")));
        }
        if !self.reader.ended() {
            let message = format!(
                "{shown}: the stream did not end (no end frame from each of its tracks): spans the target sent \
                 after the capture stopped are not in the output, nor counted"
            );
            self.report.diagnostics.push(match by_user {
                true => Diagnostic::warning(message),
                false => Diagnostic::error(format!("{message}; the source closed before the stream's end: it was cut")),
            });
        }
        let dropped: u64 = self.reader.tracks().values().map(|t| t.dropped).sum();
        if dropped > 0 {
            self.report.lost_spans = self.report.lost_spans.saturating_add(dropped);
            self.report.diagnostics.push(Diagnostic::warning(format!(
                "{shown}: the target dropped {dropped} span(s) the link did not take in time (its stop-when-full \
                 rings were full): a faster link, larger rings, or polling the stream more often keeps them"
            )));
        }
        if !self.filter.is_none() {
            let f = self.report.filtered;
            self.report.diagnostics.push(Diagnostic {
                level: Level::Note,
                message: format!(
                    "{shown}: the filters ({}) kept {} of {} spans",
                    self.filter.describe(),
                    f.kept,
                    f.kept + f.left_out()
                ),
            });
        }
        Ok(self.report)
    }

    /// One line on what came: spans, tracks, frames, bytes, and what was lost or dropped.
    pub fn summary(&self) -> String {
        let tracks = self.reader.tracks();
        let received: u64 = tracks.values().map(|t| t.received).sum();
        let lost: u64 = tracks.values().map(|t| t.lost).sum();
        let dropped: u64 = tracks.values().map(|t| t.dropped).sum();
        format!(
            "received {received} spans on {} track(s) in {} frames ({} bytes); {lost} lost on the link, {dropped} \
             dropped by the target",
            tracks.len(),
            self.reader.frames,
            self.reader.bytes(),
        )
    }
}

/// A stream that cannot be read, as a conversion error naming `name`.
fn wire_error(name: &std::path::Path) -> impl Fn(wire_file::WireFileError) -> ConvertError + '_ {
    move |e| {
        let source = crate::model::ConvertError::Wire(e);
        ConvertError::Load(crate::model::LoadError::Converted { path: name.into(), source })
    }
}
