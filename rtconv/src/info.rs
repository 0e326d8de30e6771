//! `rtconv info`: what a dump holds, how its keys were named, and what was
//! lost — as aligned text for a person, or one JSON object per dump.
//!
//! Both forms render one [`Description`], so they always say the same.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use ringtrace_format::{Calibration, DumpReason, RateSource};
use serde_json::{Value, json};

use crate::model::{self, LoadError, Losses, Process, RateOrigin, Source, Timebase, Trace};
use crate::symbolize::{self, Naming};

/// Reads the dump at `path`, names its keys and describes it.
pub fn describe(path: &Path, opts: &symbolize::Options) -> Result<Description, LoadError> {
    describe_bytes(path, &model::open(path)?, opts)
}

/// Describes the dump in `bytes` (named `path`), naming its keys.
pub fn describe_bytes(path: &Path, bytes: &[u8], opts: &symbolize::Options) -> Result<Description, LoadError> {
    let trace = model::decode(path, bytes)?;
    let naming = symbolize::symbolize(&trace, opts, &symbolize::Cache::default());
    Ok(Description::new(&trace, &naming))
}

/// Everything `rtconv info` says about one dump.
#[derive(Debug, Clone)]
pub struct Description {
    /// The dump's path.
    pub path: String,
    /// Process name, pid, producer and why the dump was written.
    pub process: Process,
    /// The clock, if the dump has one.
    pub clock: Option<ClockDescription>,
    /// Modules loaded in all.
    pub modules_loaded: usize,
    /// The modules whose files were looked for, to name span keys (none when every key was named
    /// from the dump itself).
    pub modules: Vec<ModuleDescription>,
    /// Per thread: tid, name, spans, lost spans.
    pub threads: Vec<ThreadDescription>,
    /// Spans still open at dump time.
    pub open: usize,
    /// Spans overwritten by newer ones.
    pub overwritten: u64,
    /// Spans dropped because a ring was full.
    pub dropped: u64,
    /// Every thread's losses added up (open, overwritten and dropped included).
    pub losses: Losses,
    /// Distinct keys, per backend that named them.
    pub named_by: Vec<(Source, usize)>,
    /// Names packed into the dump (`rtconv pack`), per backend that found them.
    pub packed: Vec<(&'static str, usize)>,
    /// The recorder's cost per clock mode.
    pub overhead: Vec<Calibration>,
    /// Where the dump is damaged, if it is.
    pub damage: Option<String>,
    /// Modules whose binaries could not be used.
    pub problems: Vec<String>,
    /// What naming found worth saying that lost nothing (the symbol index could not be used).
    pub warnings: Vec<String>,
    /// How the process ended, for rings read out of a core.
    pub crash: Option<model::Crash>,
}

/// One thread of a [`Description`].
#[derive(Debug, Clone)]
pub struct ThreadDescription {
    /// The kernel's thread id.
    pub tid: u64,
    /// Its name, empty if none.
    pub name: String,
    /// Spans in the dump.
    pub spans: u64,
    /// Spans recorded but not in the dump.
    pub lost: u64,
    /// Bytes per record in the dump: 24, or 12 for compact records (32-bit keys and counter readings).
    pub record_bytes: u8,
    /// What the thread did not record whole.
    pub losses: Losses,
    /// The names of its spans open at dump time, outermost first: its call path then.
    pub open: Vec<String>,
}

/// The clock part of a [`Description`].
#[derive(Debug, Clone)]
pub struct ClockDescription {
    /// The counter's name.
    pub counter: &'static str,
    /// Its width in bits.
    pub bits: u32,
    /// The rate rtconv uses and where it came from (`anchors … apart` or `nominal`), or why there is none.
    pub rate: Result<(f64, String), String>,
    /// The nominal rate and its source, if the dump gives one.
    pub nominal: Option<(u64, &'static str)>,
    /// When recording began (UTC), from the first anchor; `None` when the
    /// anchors hold no wall-clock time (a program without a real-time clock).
    pub began: Option<String>,
}

/// One module whose files were looked for, in a [`Description`].
#[derive(Debug, Clone)]
pub struct ModuleDescription {
    /// The path recorded in the dump.
    pub path: String,
    /// Its build-id in hex, empty if none.
    pub build_id: String,
    /// The binary found for it and where its DWARF is (`None`: no DWARF), or nothing usable.
    pub found: Option<(String, Option<String>)>,
}

impl Description {
    /// Describes a decoded, named dump.
    pub fn new(trace: &Trace, naming: &Naming) -> Self {
        let clock = trace.clock.as_ref().map(|model::Clock { info, anchors }| ClockDescription {
            counter: info.counter.label(),
            bits: info.counter_bits,
            rate: match Timebase::new(info, anchors) {
                Ok((tb, origin)) => {
                    let over = match (origin, anchors.first(), anchors.last()) {
                        (RateOrigin::Anchors, Some(a), Some(b)) => {
                            format!("from anchors {:.3} s apart", b.mono_ns.saturating_sub(a.mono_ns) as f64 / 1e9)
                        }
                        _ => "nominal".to_string(),
                    };
                    Ok((tb.hz(), over))
                }
                Err(e) => Err(e.to_string()),
            },
            nominal: match (info.nominal_hz, info.rate_source) {
                (0, _) | (_, RateSource::Unknown) => None,
                (hz, source) => Some((hz, source.label())),
            },
            began: anchors.first().filter(|a| a.real_ns != 0).map(|a| utc(a.real_ns)),
        });
        let modules = naming
            .files
            .iter()
            .map(|(&index, found)| {
                let m = &trace.modules[index];
                ModuleDescription {
                    path: m.path.display().to_string(),
                    build_id: symbolize::hex(&m.build_id),
                    found: found
                        .as_ref()
                        .ok()
                        .map(|f| (f.binary.display().to_string(), f.debug.as_ref().map(|d| d.display().to_string()))),
                }
            })
            .collect();
        let counts = naming.names.counts();
        let sources = Source::BACKENDS.into_iter().chain([Source::Unknown]);
        let mut packed: BTreeMap<&'static str, usize> = BTreeMap::new();
        for name in trace.packed.values() {
            *packed.entry(name.source.label()).or_default() += 1;
        }
        Description {
            path: trace.path.display().to_string(),
            process: trace.process.clone(),
            clock,
            modules_loaded: trace.modules.len(),
            modules,
            threads: trace
                .threads
                .iter()
                .enumerate()
                .map(|(i, t)| ThreadDescription {
                    tid: t.tid,
                    name: t.name.clone(),
                    spans: t.span_count(),
                    lost: t.lost(),
                    record_bytes: if t.compact { 12 } else { 24 },
                    losses: trace.thread_losses(i),
                    open: t
                        .open_keys()
                        .map(|k| naming.names.get(k).map_or_else(|| format!("{k:#x}"), |n| n.name.clone()))
                        .collect(),
                })
                .collect(),
            open: trace.threads.iter().map(|t| t.open_count()).sum(),
            overwritten: trace.threads.iter().map(|t| t.overwritten()).fold(0, u64::saturating_add),
            dropped: trace.threads.iter().map(|t| t.dropped).fold(0, u64::saturating_add),
            losses: trace.losses(),
            named_by: sources.map(|s| (s, counts.iter().find(|c| c.0 == s).map_or(0, |c| c.1))).collect(),
            packed: packed.into_iter().collect(),
            overhead: trace.calibration.clone(),
            damage: trace.damage.as_ref().map(ToString::to_string),
            problems: naming.problems.iter().map(ToString::to_string).collect(),
            warnings: naming.warnings.clone(),
            crash: trace.crash.clone(),
        }
    }

    /// The name of thread `tid`, if it recorded.
    fn thread_name(&self, tid: u64) -> Option<&str> {
        self.threads.iter().find(|t| t.tid == tid).map(|t| t.name.as_str())
    }

    /// Spans in the dump, over all threads.
    pub fn spans(&self) -> u64 {
        self.threads.iter().map(|t| t.spans).sum()
    }

    /// The report as aligned text.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "dump       {}", self.path)?;
        let Process { name, pid, producer, reason } = &self.process;
        let reason = reason.map_or("unknown", DumpReason::label);
        writeln!(out, "process    {name} (pid {pid}), written by {producer}, reason: {reason}")?;
        if let Some(crash) = &self.crash {
            match (crash.tid, crash.signal_name()) {
                (0, _) => writeln!(
                    out,
                    "crash      no thread took a fatal signal (a core of a live process, or a halted target's memory)"
                )?,
                (tid, name) => writeln!(
                    out,
                    "crash      thread {tid} ({}) took signal {} ({})",
                    self.thread_name(tid).unwrap_or("not recording"),
                    crash.signal,
                    name.unwrap_or("unknown")
                )?,
            }
            for note in &crash.notes {
                writeln!(out, "note       {note}")?;
            }
            for loss in &crash.losses {
                writeln!(out, "lost       {loss}")?;
            }
        }
        match &self.clock {
            Some(c) => {
                write!(out, "clock      {}, {} bits; ", c.counter, c.bits)?;
                let nominal = match c.nominal {
                    Some((hz, source)) => format!("{:.3} MHz ({source})", hz as f64 / 1e6),
                    None => "unknown".to_string(),
                };
                match &c.rate {
                    Ok((hz, over)) => {
                        writeln!(out, "rate {:.3} MHz {over}; nominal {nominal}", hz / 1e6)?;
                        match &c.began {
                            Some(began) => writeln!(out, "           recording began {began}")?,
                            None => {
                                writeln!(out, "           no wall-clock time in the dump: times count from the anchor")?
                            }
                        }
                    }
                    Err(e) => writeln!(out, "{e}")?,
                }
            }
            None => writeln!(out, "clock      missing")?,
        }
        writeln!(out, "modules    {} loaded, {} read for names", self.modules_loaded, self.modules.len())?;
        for m in &self.modules {
            let build_id = if m.build_id.is_empty() { "none" } else { &m.build_id };
            write!(out, "  {}  build-id {build_id}", m.path)?;
            match &m.found {
                Some((binary, Some(debug))) if debug == binary => writeln!(out, "  -> {binary} (with DWARF)")?,
                Some((binary, Some(debug))) => writeln!(out, "  -> {binary} (DWARF in {debug})")?,
                Some((binary, None)) => writeln!(out, "  -> {binary} (no DWARF)")?,
                None => writeln!(out, "  -> not usable (see problems)")?,
            }
        }
        writeln!(
            out,
            "threads    {}, {} spans ({} open at dump), {} overwritten, {} dropped",
            self.threads.len(),
            self.spans(),
            self.open,
            self.overwritten,
            self.dropped
        )?;
        let Losses { unwound, too_deep, abandoned, .. } = self.losses;
        if unwound > 0 || too_deep > 0 || abandoned > 0 {
            writeln!(
                out,
                "           {unwound} unwound (left by a longjmp or an exception without their exit; they end where \
                 the recorder noticed), {too_deep} too deep for the hooks, {abandoned} abandoned"
            )?;
        }
        if self.threads.iter().any(|t| t.record_bytes == 12) {
            writeln!(
                out,
                "           compact records: 12 bytes, 32-bit keys and counter readings (unwrapped when read)"
            )?;
        }
        for ThreadDescription { tid, name, spans, lost, losses, .. } in &self.threads {
            let name = if name.is_empty() { "-" } else { name };
            write!(out, "  {tid:>8}  {name:<16} {spans:>10} spans  {lost:>8} lost")?;
            let cut_short = Losses { overwritten: 0, dropped: 0, ..*losses };
            if cut_short.is_empty() {
                writeln!(out)?;
            } else {
                writeln!(out, "  ({})", cut_short.summary())?;
            }
        }
        let total: usize = self.named_by.iter().map(|c| c.1).sum();
        let by: Vec<String> = self.named_by.iter().map(|(s, n)| format!("{} {n}", s.name())).collect();
        writeln!(out, "keys       {total} distinct, named by: {}", by.join(", "))?;
        if !self.packed.is_empty() {
            let names: usize = self.packed.iter().map(|p| p.1).sum();
            let by: Vec<String> = self.packed.iter().map(|(s, n)| format!("{s} {n}")).collect();
            writeln!(out, "packed     {names} names in the dump (rtconv pack), found by: {}", by.join(", "))?;
        }
        if !self.overhead.is_empty() {
            let costs: Vec<String> = self
                .overhead
                .iter()
                .map(|c| format!("{} {} ticks/span ({} per read pair)", c.mode.label(), c.span_cost, c.read_cost))
                .collect();
            writeln!(out, "overhead   {}", costs.join(", "))?;
        }
        if let Some(damage) = &self.damage {
            writeln!(out, "damage     {damage}")?;
        }
        for p in &self.problems {
            writeln!(out, "problem    {p}")?;
        }
        Ok(())
    }

    /// The report as one JSON object: the same facts as the text, in
    /// integers (Hz, ticks, counts) and strings, `null` where unknown.
    pub fn to_json(&self) -> Value {
        let Process { name, pid, producer, reason } = &self.process;
        let reason = reason.map_or("unknown", DumpReason::label);
        let clock = self.clock.as_ref().map(|c| {
            json!({
                "counter": c.counter,
                "bits": c.bits,
                "rate_hz": c.rate.as_ref().ok().map(|r| r.0),
                "rate_from": c.rate.as_ref().ok().map(|r| r.1.clone()),
                "rate_error": c.rate.as_ref().err(),
                "nominal_hz": c.nominal.map(|n| n.0),
                "nominal_source": c.nominal.map(|n| n.1),
                "recording_began": c.began,
            })
        });
        json!({
            "dump": self.path,
            "process": {"name": name, "pid": pid, "producer": producer, "reason": reason},
            "clock": clock,
            "modules_loaded": self.modules_loaded,
            "modules": self.modules.iter().map(|m| json!({
                "path": m.path,
                "build_id": (!m.build_id.is_empty()).then_some(&m.build_id),
                "binary": m.found.as_ref().map(|f| &f.0),
                "dwarf": m.found.as_ref().and_then(|f| f.1.as_ref()),
            })).collect::<Vec<_>>(),
            "threads": self.threads.iter().map(|t| json!({
                "tid": t.tid, "name": t.name, "spans": t.spans, "lost": t.lost, "record_bytes": t.record_bytes,
                "losses": t.losses.to_json(), "open": t.open,
            })).collect::<Vec<_>>(),
            "spans": self.spans(),
            "open": self.open,
            "overwritten": self.overwritten,
            "dropped": self.dropped,
            "losses": self.losses.to_json(),
            "keys": self.named_by.iter().map(|(s, n)| (s.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "packed": (!self.packed.is_empty()).then(|| {
                self.packed.iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<serde_json::Map<_, _>>()
            }),
            "overhead": self.overhead.iter().map(|c| json!({
                "mode": c.mode.label(), "span_cost_ticks": c.span_cost, "read_cost_ticks": c.read_cost,
            })).collect::<Vec<_>>(),
            "damage": self.damage,
            "problems": self.problems,
            "crash": self.crash.as_ref().map(|c| json!({
                "tid": (c.tid != 0).then_some(c.tid),
                "thread": self.thread_name(c.tid),
                "signal": (c.signal != 0).then_some(c.signal),
                "signal_name": c.signal_name(),
                "notes": c.notes,
                "losses": c.losses,
            })),
        })
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
