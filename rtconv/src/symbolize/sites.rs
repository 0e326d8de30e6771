//! Names from the dump's own site section: labels written at compile time.

use ringtrace_format::decode_site;

use crate::model::{Source, SpanName, Trace};

/// The site descriptor at `offset` in the trace's site section.
pub fn resolve(trace: &Trace, offset: usize) -> Option<SpanName> {
    let sites = trace.sites.as_ref()?;
    let site = decode_site(&sites.bytes, offset, trace.endian)?;
    Some(SpanName {
        name: String::from_utf8_lossy(site.label).into_owned(),
        file: Some(String::from_utf8_lossy(site.file).into_owned()),
        line: Some(site.line),
        column: None,
        source: Source::Site,
        inlined_into: Vec::new(),
    })
}
