//! What the trace viewers open: the largest outputs measured opening in speedscope, and
//! Perfetto UI's documented limit; and the note that says when an output is past them and
//! what would fit.
//!
//! - Perfetto's UI holds a trace in the browser's memory, "2 GB typical", and a trace takes
//!   2 to 4 times its size there once loaded (perfetto.dev/docs/visualization/large-traces):
//!   512 MiB of trace is where a 4× inflation fills it. Past it, its native accelerator
//!   (`trace_processor --httpd`) still opens the trace.
//! - speedscope: measured in the suite's Chromium (docs/PERFORMANCE.md, "What the viewers
//!   open"; `tests/viewer/speedscope.mjs --load-only`).

use crate::convert::Format;

/// A viewer and the largest output it opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewer {
    /// Its name.
    pub name: &'static str,
    /// The largest output (uncompressed bytes) it opens.
    pub max_bytes: u64,
    /// Where the figure comes from.
    pub source: &'static str,
}

/// Perfetto's UI (ui.perfetto.dev), in a browser.
pub const PERFETTO_UI: Viewer = Viewer {
    name: "Perfetto's UI",
    max_bytes: 512 << 20,
    source: "its documented 2 GB of browser memory, traces taking 2-4x their size once loaded",
};

/// speedscope, in Chromium.
pub const SPEEDSCOPE: Viewer = Viewer {
    name: "speedscope",
    max_bytes: SPEEDSCOPE_MEASURED,
    source: "the largest Chrome JSON measured opening in speedscope 1.25 in Chromium 156",
};

/// The largest Chrome JSON speedscope was measured opening (docs/PERFORMANCE.md): 89,244,619
/// bytes (85.1 MiB), 1.05 M spans on six threads, in 12 min 20 s.
const SPEEDSCOPE_MEASURED: u64 = 85 << 20;

/// The viewers an output of `format` is for.
pub fn of(format: Format) -> &'static [Viewer] {
    match format {
        Format::Chrome(_) => &[SPEEDSCOPE, PERFETTO_UI],
        Format::Perfetto | Format::Ftrace | Format::Systrace => &[PERFETTO_UI],
        _ => &[],
    }
}

/// The note for an output of `format` (named `name`) that took `bytes` (uncompressed), if it is
/// larger than a viewer of it opens: which viewer, and the `--max-bytes` and `--split` options
/// (added to `command`, the conversion as given) that would fit it.
pub fn note(format: Format, name: &str, bytes: u64, command: &str) -> Option<String> {
    let (past, smallest) = past(format, bytes)?;
    let split = if matches!(format, Format::Chrome(_) | Format::Perfetto) {
        format!(", or `{command} --split {}` (parts that each open)", size(smallest))
    } else {
        String::new()
    };
    Some(format!(
        "{name} takes {bytes} bytes, more than {past}: `{command} --max-bytes {}` keeps the longest spans within it{split}",
        size(smallest)
    ))
}

/// The note for a batch (`command`) whose outputs of `format` were, `count` of them, larger
/// than a viewer of them opens, the largest `name` taking `bytes`: which viewer, and the
/// `--max-bytes` that would fit each.
pub fn batch_note(format: Format, count: u64, name: &str, bytes: u64, command: &str) -> Option<String> {
    let (past, smallest) = past(format, bytes).filter(|_| count > 0)?;
    Some(format!(
        "{count} output(s) take more than {past}; the largest, {name}, takes {bytes} bytes: `{command} --max-bytes {}` \
         keeps the longest spans of each within it",
        size(smallest)
    ))
}

/// The viewers of `format` an output of `bytes` is too large for, said, and the smallest of
/// their limits; `None` when every viewer opens it.
fn past(format: Format, bytes: u64) -> Option<(String, u64)> {
    let over: Vec<&Viewer> = of(format).iter().filter(|v| bytes > v.max_bytes).collect();
    let smallest = over.iter().map(|v| v.max_bytes).min()?;
    let names: Vec<String> =
        over.iter().map(|v| format!("{} opens about {} ({})", v.name, size(v.max_bytes), v.source)).collect();
    Some((names.join("; "), smallest))
}

/// `bytes` as `--max-bytes` takes them: whole MiB (`100M`) where they are, else bytes.
fn size(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) { format!("{}M", bytes >> 20) } else { bytes.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_past_a_viewer_gets_the_options_that_fit_it() {
        let chrome = Format::Chrome(Default::default());
        assert_eq!(note(chrome, "t.json", SPEEDSCOPE.max_bytes, "rtconv convert d.rtd -o t.json"), None);
        let line = note(chrome, "t.json", SPEEDSCOPE.max_bytes + 1, "rtconv convert d.rtd -o t.json").unwrap();
        assert!(line.starts_with(&format!("t.json takes {} bytes, more than", SPEEDSCOPE.max_bytes + 1)), "{line}");
        assert!(line.contains("speedscope opens about") && !line.contains("Perfetto"), "{line}");
        assert!(line.contains("`rtconv convert d.rtd -o t.json --max-bytes 85M`"), "{line}");
        assert!(line.contains("--split 85M"), "{line}");
        let line = note(Format::Ftrace, "t.txt", 600 << 20, "rtconv convert d.rtd -o t.txt").unwrap();
        assert!(line.contains("Perfetto's UI") && line.contains("--max-bytes 512M") && !line.contains("--split"));
        assert_eq!(note(Format::Folded, "x", u64::MAX, "x"), None);
    }

    #[test]
    fn a_batch_past_a_viewer_gets_one_note_for_all_its_outputs() {
        let chrome = Format::Chrome(Default::default());
        let big = SPEEDSCOPE.max_bytes + 1;
        assert_eq!(batch_note(chrome, 0, "out/a.json", big, "rtconv batch d -o out"), None);
        assert_eq!(batch_note(chrome, 2, "out/a.json", SPEEDSCOPE.max_bytes, "rtconv batch d -o out"), None);
        let line = batch_note(chrome, 2, "out/a.json", big, "rtconv batch d -o out").unwrap();
        assert!(line.starts_with("2 output(s) take more than speedscope opens about 85M"), "{line}");
        assert!(line.contains(&format!("the largest, out/a.json, takes {big} bytes")), "{line}");
        assert!(line.contains("`rtconv batch d -o out --max-bytes 85M`") && !line.contains("--split"), "{line}");
    }
}
