//! `rtconv info`: what a dump holds, how its keys were named, and what was lost.

use std::io::{self, Write};
use std::path::Path;

use ringtrace_format::{ClockMode, CounterKind, DumpReason, RateSource};

use crate::load::{self, LoadError, Trace};
use crate::symbolize::{self, Source, Symbols};
use crate::timebase::{RateOrigin, Timebase};

/// Writes the report for the dump at `path`.
pub fn info(path: &Path, opts: &symbolize::Options, out: &mut dyn Write) -> Result<(), InfoError> {
    let bytes = load::open(path)?;
    let trace = load::decode(path, &bytes)?;
    let (symbols, problems) = symbolize::symbolize(&trace, opts);
    write_report(&trace, &symbols, out).map_err(InfoError::Output)?;
    for p in problems {
        writeln!(out, "problem    {p}").map_err(InfoError::Output)?;
    }
    Ok(())
}

/// Why there is no report.
#[derive(Debug, thiserror::Error)]
pub enum InfoError {
    /// The dump could not be read at all.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Writing the report failed.
    #[error("writing the output: {0}")]
    Output(#[source] io::Error),
}

fn write_report(trace: &Trace, symbols: &Symbols, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "dump       {}", trace.path.display())?;
    let p = &trace.process;
    let reason = p.reason.map_or("unknown", reason_name);
    writeln!(out, "process    {} (pid {}), written by {}, reason: {reason}", p.name, p.pid, p.producer)?;
    match &trace.clock {
        Some((info, anchors)) => {
            let counter = match info.counter {
                CounterKind::X86Tsc => "x86 TSC",
                CounterKind::Aarch64Cntvct => "CNTVCT_EL0",
                CounterKind::MonotonicNs => "monotonic ns",
                CounterKind::ArmDwtCyccnt => "Cortex-M DWT CYCCNT",
                CounterKind::User => "user counter",
                CounterKind::Other(_) => "unknown counter",
            };
            let nominal = match (info.nominal_hz, info.rate_source) {
                (0, _) | (_, RateSource::Unknown) => "unknown".to_string(),
                (hz, source) => format!("{:.3} MHz ({})", hz as f64 / 1e6, rate_source_name(source)),
            };
            write!(out, "clock      {counter}, {} bits; ", info.counter_bits)?;
            match Timebase::new(info, anchors) {
                Ok((tb, origin)) => {
                    let over = match (origin, anchors.first(), anchors.last()) {
                        (RateOrigin::Anchors, Some(a), Some(b)) => {
                            format!("from anchors {:.3} s apart", b.mono_ns.saturating_sub(a.mono_ns) as f64 / 1e9)
                        }
                        _ => "nominal".to_string(),
                    };
                    writeln!(out, "rate {:.3} MHz {over}; nominal {nominal}", tb.hz() / 1e6)?;
                    if let Some(first) = anchors.first() {
                        writeln!(out, "           recording began {}", utc(first.real_ns))?;
                    }
                }
                Err(e) => writeln!(out, "{e}")?,
            }
        }
        None => writeln!(out, "clock      missing")?,
    }
    let in_use: Vec<usize> = symbols.files.keys().copied().collect();
    writeln!(out, "modules    {} loaded, {} holding span keys", trace.modules.len(), in_use.len())?;
    for index in in_use {
        let m = &trace.modules[index];
        let build_id = if m.build_id.is_empty() { "none".to_string() } else { symbolize::files::hex(&m.build_id) };
        write!(out, "  {}  build-id {build_id}", m.path.display())?;
        match &symbols.files[&index] {
            Ok(found) => match &found.debug {
                Some(debug) if *debug == found.binary => writeln!(out, "  -> {} (with DWARF)", found.binary.display())?,
                Some(debug) => writeln!(out, "  -> {} (DWARF in {})", found.binary.display(), debug.display())?,
                None => writeln!(out, "  -> {} (no DWARF)", found.binary.display())?,
            },
            Err(_) => writeln!(out, "  -> not usable (see problems)")?,
        }
    }
    let spans: u64 = trace.threads.iter().map(|t| t.span_count()).sum();
    let open: usize = trace.threads.iter().map(|t| t.open_count()).sum();
    let overwritten: u64 = trace.threads.iter().map(|t| t.overwritten()).sum();
    let dropped: u64 = trace.threads.iter().map(|t| t.dropped).sum();
    writeln!(
        out,
        "threads    {}, {spans} spans ({open} open at dump), {overwritten} overwritten, {dropped} dropped",
        trace.threads.len()
    )?;
    for t in &trace.threads {
        let name = if t.name.is_empty() { "-" } else { &t.name };
        writeln!(out, "  {:>8}  {:<16} {:>10} spans  {:>8} lost", t.tid, name, t.span_count(), t.lost())?;
    }
    let counts = symbols.counts();
    let total: usize = counts.iter().map(|c| c.1).sum();
    let by: Vec<String> = [
        Source::Packed,
        Source::Site,
        Source::Dwarf,
        Source::Symtab,
        Source::Dladdr,
        Source::Addr2line,
        Source::Unknown,
    ]
    .iter()
    .map(|s| format!("{} {}", s.name(), counts.iter().find(|c| c.0 == *s).map_or(0, |c| c.1)))
    .collect();
    writeln!(out, "keys       {total} distinct, named by: {}", by.join(", "))?;
    if !trace.packed.is_empty() {
        let mut by_source: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for name in trace.packed.values() {
            let source = match name.source {
                ringtrace_format::NameSource::Site => "sites",
                ringtrace_format::NameSource::Dwarf => "dwarf",
                ringtrace_format::NameSource::Symtab => "symtab",
                ringtrace_format::NameSource::Dladdr => "dladdr",
                ringtrace_format::NameSource::Addr2line => "addr2line",
                ringtrace_format::NameSource::Other(_) => "other",
            };
            *by_source.entry(source).or_default() += 1;
        }
        let by: Vec<String> = by_source.iter().map(|(s, n)| format!("{s} {n}")).collect();
        writeln!(
            out,
            "packed     {} names in the dump (rtconv pack), found by: {}",
            trace.packed.len(),
            by.join(", ")
        )?;
    }
    if !trace.calibration.is_empty() {
        let costs: Vec<String> = trace
            .calibration
            .iter()
            .map(|c| {
                let mode = match c.mode {
                    ClockMode::Fast => "fast",
                    ClockMode::Ordered => "ordered",
                    ClockMode::Serialized => "serialized",
                    ClockMode::Other(_) => "other",
                };
                format!("{mode} {} ticks/span ({} per read pair)", c.span_cost, c.read_cost)
            })
            .collect();
        writeln!(out, "overhead   {}", costs.join(", "))?;
    }
    if let Some(damage) = &trace.damage {
        writeln!(out, "damage     {damage}")?;
    }
    Ok(())
}

fn reason_name(reason: DumpReason) -> &'static str {
    match reason {
        DumpReason::Unspecified => "unspecified",
        DumpReason::Requested => "requested",
        DumpReason::Exit => "exit",
        DumpReason::Signal => "signal",
        DumpReason::RingFull => "ring full",
        DumpReason::Panic => "panic",
        DumpReason::Other(_) => "other",
    }
}

fn rate_source_name(source: RateSource) -> &'static str {
    match source {
        RateSource::Cpuid => "CPUID",
        RateSource::Calibrated => "calibrated",
        RateSource::Register => "CNTFRQ",
        RateSource::Exact => "exact",
        RateSource::User => "given by the program",
        RateSource::Unknown | RateSource::Other(_) => "unknown",
    }
}

/// Nanoseconds since the Unix epoch as an ISO 8601 UTC time.
fn utc(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ns % 1_000_000_000 / 1000
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_matches_known_instants() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00.000000Z");
        // Expected values from GNU `date -u -d @SECONDS`.
        assert_eq!(super::utc(951_782_400_000_000_000), "2000-02-29T00:00:00.000000Z");
        assert_eq!(super::utc(1_795_978_568_958_033_234), "2026-11-29T18:56:08.958033Z");
    }
}
