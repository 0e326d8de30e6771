//! What a batch reads: dump files, directories (recursively), glob patterns,
//! and tar archives (`.tar`, `.tar.gz`/`.tgz`, `.tar.zst`) read as streams,
//! entry by entry, without unpacking anything to disk.
//!
//! Dumps are the regular files named `*.rtd`, and core files named `core`,
//! `core.*` or `*.core`, whose rings are read as a dump (in directories and
//! archives; a file named on the command line is taken whatever its name); FIFOs,
//! devices and sockets are refused, named. A dump in an archive is read when
//! its turn comes, section by section up to its end marker
//! ([`DumpExtent`]), sized by the data that arrives and capped at
//! `max_dump_size` — never by a length field of the archive or the dump —
//! so a batch holds about one dump per worker, whatever the size of the
//! archive. gzip members and zstd frames are read one after another to the
//! end of the file (what `pigz`, `pzstd` and concatenation make).

use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ringtrace_format::extent::{DumpExtent, Step};

use crate::core_file::is_core_name;

/// The largest zstd window an archive may ask for: 128 MiB (zstd's default
/// limit for decoders is the same order; larger windows need `--long` on purpose).
const MAX_ZSTD_WINDOW: u64 = 128 << 20;

/// How an archive is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// A plain tar.
    None,
    /// gzip (`.tar.gz`, `.tgz`).
    Gzip,
    /// Zstandard (`.tar.zst`, `.tzst`).
    Zstd,
}

/// One input, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A dump file.
    File(PathBuf),
    /// A tar archive of dumps.
    Archive(PathBuf, Compression),
}

impl Input {
    /// Where it is.
    pub fn path(&self) -> &Path {
        match self {
            Input::File(p) | Input::Archive(p, _) => p,
        }
    }
}

/// An archive by its name, or `None` for anything else.
pub fn archive_kind(path: &Path) -> Option<Compression> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".tar") {
        Some(Compression::None)
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        Some(Compression::Gzip)
    } else if name.ends_with(".tar.zst") || name.ends_with(".tzst") {
        Some(Compression::Zstd)
    } else {
        None
    }
}

/// Whether a file name or an archive entry's path names a dump or a core.
fn is_dump_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".rtd") || lower.ends_with(".rtw") || is_core_entry(name)
}

/// Whether a file name or an archive entry's path names a core file.
fn is_core_entry(path: &str) -> bool {
    is_core_name(path.rsplit('/').next().unwrap_or(path))
}

/// A file's bytes as the batch's item: a core's rings, a wire stream's spans, as a dump.
fn dump_item(name: String, bytes: Bytes, file_time: Option<std::time::SystemTime>, note: Option<String>) -> Item {
    match crate::model::dump_of(bytes, file_time) {
        Ok(bytes) => Item::Dump { name, bytes, note },
        Err(e) => Item::Unreadable { name, reason: e.to_string() },
    }
}

/// Expands the command line's inputs, in order: a directory into its dumps
/// and archives (sorted, recursively), a glob pattern into its matches.
/// Returns the inputs and one line per argument that named nothing.
pub fn expand(args: &[PathBuf]) -> (Vec<Input>, Vec<String>) {
    let (mut inputs, mut problems) = (Vec::new(), Vec::new());
    for arg in args {
        if arg.is_dir() {
            walk(arg, &mut inputs, &mut problems);
        } else if arg.exists() {
            inputs.push(classify(arg.clone()));
        } else {
            let text = arg.to_string_lossy();
            let is_pattern = text.contains(['*', '?', '[']);
            match glob::glob(&text) {
                Ok(paths) if is_pattern => {
                    let before = inputs.len();
                    for path in paths {
                        match path {
                            Ok(p) if p.is_dir() => walk(&p, &mut inputs, &mut problems),
                            Ok(p) => inputs.push(classify(p)),
                            Err(e) => problems.push(format!("{}: {}", e.path().display(), e.error())),
                        }
                    }
                    if inputs.len() == before {
                        problems.push(format!("{text}: the pattern matches no file"));
                    }
                }
                Err(e) if is_pattern => problems.push(format!("{text}: not a valid glob pattern: {e}")),
                _ => problems.push(format!("{text}: no such file or directory")),
            }
        }
    }
    (inputs, problems)
}

fn classify(path: PathBuf) -> Input {
    match archive_kind(&path) {
        Some(kind) => Input::Archive(path, kind),
        None => Input::File(path),
    }
}

fn walk(dir: &Path, inputs: &mut Vec<Input>, problems: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            problems.push(format!("{}: cannot list: {e}", dir.display()));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        // Symbolic links to directories are not followed: a loop cannot hang the walk.
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.is_dir() {
            walk(&path, inputs, problems);
        } else if archive_kind(&path).is_some() || is_dump_name(&path.file_name().unwrap_or_default().to_string_lossy())
        {
            inputs.push(classify(path));
        }
    }
}

/// One dump of the batch, or why one could not be read.
pub enum Item {
    /// A dump's bytes and where they came from.
    Dump {
        /// `path`, or `archive!entry`.
        name: String,
        /// The bytes.
        bytes: Bytes,
        /// A warning about how it was read (bytes after its end marker ignored).
        note: Option<String>,
    },
    /// A dump or archive that could not be read; later entries of a damaged archive are lost.
    Unreadable {
        /// As for `Dump`.
        name: String,
        /// Why.
        reason: String,
    },
}

/// A dump's bytes: a file mapped, or an archive entry read.
pub type Bytes = crate::io::FileBytes;

/// Counts the bytes read through it, for progress.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The dumps of `inputs`, in order, read by a thread of their own and
/// handed over through a queue of `capacity` (so at most `capacity + 1`
/// dumps wait in memory); `consumed` counts the input bytes read so far
/// (files whole, archives as compressed bytes).
pub fn items(
    inputs: Vec<Input>,
    consumed: Arc<AtomicU64>,
    capacity: usize,
    max_dump_size: u64,
) -> io::Result<impl Iterator<Item = Item> + Send> {
    let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
    std::thread::Builder::new()
        .name("rtconv-read".into())
        .spawn(move || {
            for input in inputs {
                let more = match input {
                    Input::File(path) => tx.send(read_file(&path, &consumed)).is_ok(),
                    Input::Archive(path, kind) => read_archive(&path, kind, &consumed, max_dump_size, &tx),
                };
                if !more {
                    return; // the consumer stopped
                }
            }
        })
        .map(|_| rx.into_iter())
}

fn read_file(path: &Path, consumed: &AtomicU64) -> Item {
    let name = path.display().to_string();
    match crate::io::map_file(path, crate::io::Pages::Populate) {
        Ok(bytes) => {
            consumed.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            let file_time = std::fs::metadata(path).and_then(|m| m.modified()).ok();
            dump_item(name, bytes, file_time, None)
        }
        Err(e) => Item::Unreadable { name, reason: format!("cannot read: {e}") },
    }
}

type ArchiveReader = Box<dyn Read + Send>;

fn open_archive(path: &Path, kind: Compression, consumed: Arc<AtomicU64>) -> Result<ArchiveReader, String> {
    let file = crate::io::open_regular(path).map_err(|e| format!("cannot read: {e}"))?;
    decompressed(BufReader::with_capacity(1 << 16, Counting { inner: file, count: consumed }), kind)
}

/// The tar stream inside `input`, compressed as `kind` says.
fn decompressed<'a>(input: impl Read + Send + 'a, kind: Compression) -> Result<Box<dyn Read + Send + 'a>, String> {
    Ok(match kind {
        Compression::None => Box::new(input),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
        Compression::Zstd => Box::new(ZstdFrames::new(input).map_err(|e| format!("{e}; expected a .tar.zst archive"))?),
    })
}

/// A zstd stream of any number of frames, read one after another to the
/// end of the input; skippable frames (the ones `pzstd` puts before each
/// frame) are skipped.
struct ZstdFrames<R: Read> {
    /// The frame being decoded; `None` at the end of the input.
    frame: Option<Frame<R>>,
}

/// One zstd frame's decoder: its magic number, read ahead, then the input.
type Frame<R> = ruzstd::decoding::StreamingDecoder<io::Chain<io::Cursor<[u8; 4]>, R>, ruzstd::decoding::FrameDecoder>;

/// Magic numbers of zstd skippable frames: 0x184D2A50 to 0x184D2A5F.
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

impl<R: Read> ZstdFrames<R> {
    fn new(input: R) -> io::Result<Self> {
        Ok(ZstdFrames { frame: Self::next_frame(input)? })
    }

    /// The decoder of the next data frame of `input`, or `None` at its end.
    fn next_frame(mut input: R) -> io::Result<Option<Frame<R>>> {
        loop {
            let mut magic = [0u8; 4];
            let got = (&mut input).take(4).read(&mut magic)?;
            if got == 0 {
                return Ok(None);
            }
            if got < 4 {
                input.read_exact(&mut magic[got..])?; // a short read, or a stream cut inside a magic number
            }
            if u32::from_le_bytes(magic) & !0xF == SKIPPABLE_MAGIC {
                let mut len = [0u8; 4];
                input.read_exact(&mut len)?;
                let skip = u64::from(u32::from_le_bytes(len));
                if io::copy(&mut (&mut input).take(skip), &mut io::sink())? < skip {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a skippable zstd frame is cut short"));
                }
                continue;
            }
            let frame = io::Cursor::new(magic).chain(input);
            return ruzstd::decoding::StreamingDecoder::new_with_max_window_size(frame, MAX_ZSTD_WINDOW)
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not a zstd stream: {e}")));
        }
    }
}

impl<R: Read> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while let Some(frame) = &mut self.frame {
            let n = frame.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // This frame is done (its magic number long read): the next one, if the input holds more.
            let Some(done) = self.frame.take() else { break };
            self.frame = Self::next_frame(done.into_inner().into_inner().1)?;
        }
        Ok(0)
    }
}

/// Reads one dump from an archive entry, up to its end marker and at most
/// `limit` bytes: its bytes, and whether anything followed the end marker;
/// `Err` with the reason when the entry is larger than `limit` or unreadable.
fn read_dump(entry: &mut impl Read, limit: u64) -> Result<(Vec<u8>, bool), String> {
    let mut bytes = Vec::new();
    let mut extent = DumpExtent::default();
    loop {
        match extent.step(&bytes) {
            Step::End(len) => {
                bytes.truncate(len);
                let trailing = entry.read(&mut [0u8; 1]).is_ok_and(|n| n > 0);
                return Ok((bytes, trailing));
            }
            Step::Need(total) => {
                // One byte past the limit tells a too-large dump from one that fits exactly.
                let want = total.min(limit.saturating_add(1)).saturating_sub(bytes.len() as u64);
                // Grows with the data that arrives, however much was asked for.
                let read =
                    entry.take(want).read_to_end(&mut bytes).map_err(|e| format!("cannot read the entry: {e}"))?;
                if bytes.len() as u64 > limit {
                    return Err(format!(
                        "the dump is larger than --max-dump-size ({limit} bytes); raise it to convert this dump"
                    ));
                }
                if read == 0 {
                    return Ok((bytes, false)); // cut short: the converter says where
                }
            }
        }
    }
}

/// An archive entry whole (a core: it has no end marker), up to `limit` bytes.
fn read_whole(entry: &mut impl Read, limit: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    entry.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| format!("cannot read the entry: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("the core is larger than --max-dump-size ({limit} bytes); raise it to read this core"));
    }
    Ok(bytes)
}

/// Sends the dumps of one archive, entry by entry; false if the consumer stopped.
fn read_archive(
    path: &Path,
    kind: Compression,
    consumed: &Arc<AtomicU64>,
    max_dump_size: u64,
    tx: &std::sync::mpsc::SyncSender<Item>,
) -> bool {
    let archive_name = path.display().to_string();
    match open_archive(path, kind, consumed.clone()) {
        Ok(reader) => each_dump(reader, &archive_name, max_dump_size, &mut |item| tx.send(item).is_ok()),
        Err(reason) => tx.send(Item::Unreadable { name: archive_name, reason }).is_ok(),
    }
}

/// The dumps of an archive held in memory, as a batch reads them: each
/// one's name (`archive!entry`) and bytes or why it could not be read (the
/// archive's own name for an archive that is damaged or holds no dump).
pub fn dumps_in_archive(bytes: &[u8], kind: Compression, max_dump_size: u64) -> Vec<(String, Result<Bytes, String>)> {
    let reader = match decompressed(bytes, kind) {
        Ok(reader) => reader,
        Err(reason) => return vec![("archive".into(), Err(reason))],
    };
    let mut found = Vec::new();
    each_dump(reader, "archive", max_dump_size, &mut |item| {
        found.push(match item {
            Item::Dump { name, bytes, .. } => (name, Ok(bytes)),
            Item::Unreadable { name, reason } => (name, Err(reason)),
        });
        true
    });
    found
}

/// Hands `send` each dump of the tar stream `reader` (named `archive_name`
/// in messages), entry by entry, and a failure naming the archive if it is
/// damaged or holds no dump; false if `send` said stop.
fn each_dump(reader: impl Read, archive_name: &str, max_dump_size: u64, send: &mut dyn FnMut(Item) -> bool) -> bool {
    let unreadable = |reason: String| Item::Unreadable { name: archive_name.to_string(), reason };
    let mut archive = tar::Archive::new(reader);
    let entries = match archive.entries() {
        Ok(entries) => entries,
        Err(e) => return send(unreadable(format!("not a tar archive: {e}"))),
    };
    let mut dumps = 0u64;
    for (index, entry) in entries.enumerate() {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let reason = format!(
                    "damaged after entry {index}: {e}; the rest of the archive is lost (earlier dumps are converted)"
                );
                return send(unreadable(reason));
            }
        };
        let entry_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if !entry.header().entry_type().is_file() || !is_dump_name(&entry_name) {
            continue;
        }
        let name = format!("{archive_name}!{entry_name}");
        dumps += 1;
        if is_core_entry(&entry_name) {
            let mtime = entry.header().mtime().ok().map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
            let item = match read_whole(&mut entry, max_dump_size) {
                Ok(bytes) => dump_item(name, Bytes::from_vec(bytes), mtime, None),
                Err(reason) => Item::Unreadable { name, reason },
            };
            if !send(item) {
                return false;
            }
            continue;
        }
        let item = match read_dump(&mut entry, max_dump_size) {
            Ok((bytes, trailing)) => {
                let note = trailing.then(|| format!("{name}: the bytes after the dump's end marker were ignored"));
                Item::Dump { name, bytes: Bytes::from_vec(bytes), note }
            }
            Err(reason) => Item::Unreadable { name, reason },
        };
        if !send(item) {
            return false;
        }
    }
    if dumps == 0 {
        return send(unreadable(
            "holds no dump (no regular file named *.rtd, core or core.*); give an archive of dumps".to_string(),
        ));
    }
    true
}
