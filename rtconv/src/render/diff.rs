//! `rtconv diff`'s outputs: a table, CSV and JSON of the changes, by impact;
//! and a differential flame graph (red: more self time in the new dumps,
//! blue: less), through inferno.

use std::io::{self, Write};

use crate::diff::{Change, Metric};
use crate::stats::Output;

use super::stats_table::human;

/// The metrics the table shows, in order.
const SHOWN: [Metric; 5] = [Metric::Calls, Metric::SelfTime, Metric::Total, Metric::P50, Metric::P99];

/// Writes `changes` as `output` says (a table, CSV or JSON).
pub fn write(changes: &[Change], output: Output, out: &mut dyn Write) -> io::Result<()> {
    match output {
        Output::Table => write_table(changes, out),
        Output::Csv => write_csv(changes, out),
        Output::Json => write_json(changes, out),
    }
}

/// `+12.3%`, or `new`/`gone` where a side is missing.
fn relative(change: &Change, metric: Metric) -> String {
    match (change.relative(metric), change.values(metric)) {
        (Some(r), _) => format!("{:+.1}%", r * 100.0),
        (None, (0, 0)) => "0".to_string(),
        (None, _) => "new".to_string(),
    }
}

/// `BASE → NEW (+x%)` for one metric.
fn cell(change: &Change, metric: Metric) -> String {
    let (base, new) = change.values(metric);
    let show = |v: u64| if metric == Metric::Calls { v.to_string() } else { human(v as f64) };
    format!("{} → {} ({})", show(base), show(new), relative(change, metric))
}

/// The verdict with its p-value, where the test ran.
fn verdict(change: &Change) -> String {
    match change.shift {
        Some(s) if s.p_value < 0.001 => format!("{} (p < 0.001)", change.verdict().label()),
        Some(s) => format!("{} (p = {:.3})", change.verdict().label(), s.p_value),
        None => change.verdict().label().to_string(),
    }
}

fn write_table(changes: &[Change], out: &mut dyn Write) -> io::Result<()> {
    let mut rows: Vec<Vec<String>> =
        vec![["function", "calls", "self", "total", "p50", "p99", "change"].iter().map(|s| s.to_string()).collect()];
    for c in changes {
        let mut row = vec![c.function.clone()];
        row.extend(SHOWN.iter().map(|&m| cell(c, m)));
        row.push(verdict(c));
        rows.push(row);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for row in &rows {
        let mut line = String::new();
        for (i, (text, width)) in row.iter().zip(&widths).enumerate() {
            let pad = width - text.chars().count();
            match i {
                0 => line.push_str(&format!("{text}{}", " ".repeat(pad))),
                i if i + 1 == row.len() => line.push_str(&format!("  {text}")),
                _ => line.push_str(&format!("  {}{text}", " ".repeat(pad))),
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// A CSV field, quoted where it must be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

fn write_csv(changes: &[Change], out: &mut dyn Write) -> io::Result<()> {
    let mut header = vec!["function".to_string(), "change".into(), "p_value".into(), "slower_probability".into()];
    for (name, _) in Metric::ALL {
        header.extend([format!("base_{name}"), format!("new_{name}"), format!("delta_{name}"), format!("rel_{name}")]);
    }
    writeln!(out, "{}", header.join(","))?;
    for c in changes {
        let mut fields = vec![csv_field(&c.function), c.verdict().label().to_string()];
        fields.push(c.shift.map_or(String::new(), |s| format!("{:e}", s.p_value)));
        fields.push(c.shift.map_or(String::new(), |s| format!("{:.6}", s.slower)));
        for (_, metric) in Metric::ALL {
            let (base, new) = c.values(metric);
            fields.extend([base.to_string(), new.to_string(), c.delta(metric).to_string()]);
            fields.push(c.relative(metric).map_or(String::new(), |r| format!("{r:.6}")));
        }
        writeln!(out, "{}", fields.join(","))?;
    }
    Ok(())
}

fn write_json(changes: &[Change], out: &mut dyn Write) -> io::Result<()> {
    let side = |row: &Option<crate::stats::Row>| {
        row.as_ref().map(|r| {
            let mut o = serde_json::Map::new();
            for (name, metric) in Metric::ALL {
                let key = if metric == Metric::Calls { name.to_string() } else { format!("{name}_ns") };
                o.insert(key, metric.of(r).into());
            }
            serde_json::Value::Object(o)
        })
    };
    let value: Vec<serde_json::Value> = changes
        .iter()
        .map(|c| {
            let mut change = serde_json::Map::new();
            for (name, metric) in Metric::ALL {
                change.insert(
                    name.to_string(),
                    serde_json::json!({"delta": c.delta(metric) as i64, "relative": c.relative(metric)}),
                );
            }
            serde_json::json!({
                "function": c.function,
                "change": c.verdict().label(),
                "p_value": c.shift.map(|s| s.p_value),
                "slower_probability": c.shift.map(|s| s.slower),
                "base": side(&c.base),
                "new": side(&c.new),
                "delta": change,
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::from)?;
    writeln!(out)
}

/// A differential flame graph of `new`'s collapsed stacks against `base`'s
/// (each `(path, self_ns)`): shaped by the new ones, red where a path has
/// more self time than in the base, blue where it has less.
pub fn write_flamegraph(
    base: &[(String, u64)],
    new: &[(String, u64)],
    title: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let folded = |stacks: &[(String, u64)]| -> Vec<u8> {
        stacks.iter().flat_map(|(path, weight)| format!("{path} {weight}\n").into_bytes()).collect()
    };
    let mut lines = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        &folded(base)[..],
        &folded(new)[..],
        &mut lines,
    )?;
    let text = String::from_utf8_lossy(&lines);
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = "ns".into();
    inferno::flamegraph::from_lines(&mut options, text.lines(), out)?;
    Ok(())
}
