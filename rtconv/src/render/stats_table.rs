//! `rtconv stats` output: the per-function table (aligned, with human
//! units), CSV or JSON (integer nanoseconds).

use std::io::{self, Write};

use crate::stats::{Output, Scope};

const HEADERS: [&str; 12] =
    ["function", "calls", "total", "self", "self %", "min", "mean", "p50", "p90", "p99", "max", "stddev"];

/// Writes `scopes` ([`crate::stats::compute`]) in the chosen form; `color`
/// makes the table's headings bold (ANSI escapes), for a terminal.
pub fn write(scopes: &[Scope], output: Output, color: bool, out: &mut dyn Write) -> io::Result<()> {
    match output {
        Output::Table => write_table(scopes, color, out),
        Output::Csv => write_csv(scopes, out),
        Output::Json => write_json(scopes, out),
    }
}

fn write_table(scopes: &[Scope], color: bool, out: &mut dyn Write) -> io::Result<()> {
    let (bold, plain) = if color { ("\x1b[1m", "\x1b[0m") } else { ("", "") };
    for (i, scope) in scopes.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{bold}{} — {} in top-level spans{plain}", scope.name, human(scope.total_ns as f64))?;
        if let Some(cost) = scope.calibration {
            writeln!(
                out,
                "calibrated: {} ns taken out of every span, and {} ns for each span nested in it",
                cost.read_ns, cost.span_ns
            )?;
        }
        if scope.cleaned {
            let outliers: u64 = scope.rows.iter().map(|r| r.outliers).sum();
            writeln!(
                out,
                "cleaned: {outliers} call(s) above Q3 + 1.5 IQR of bucket maxima left out of min..stddev \
                 (calls, total and self keep them)"
            )?;
        }
        if !scope.losses.is_empty() {
            writeln!(out, "losses: {}", scope.losses.summary())?;
        }
        let missing: Vec<&str> =
            scope.rows.iter().filter(|r| r.missing_children > 0).map(|r| r.name.as_str()).collect();
        if !missing.is_empty() {
            let calls: u64 = scope.rows.iter().map(|r| r.missing_children).sum();
            writeln!(
                out,
                "{calls} call(s) of {} lost children the ring did not keep (overwritten before, or dropped \
                 after, what it kept; column \"lost children\"): their self time includes them",
                missing.join(", ")
            )?;
        }
        let with_dumps = scope.rows.iter().any(|r| r.dumps.is_some());
        let with_unwound = scope.rows.iter().any(|r| r.unwound > 0);
        let with_missing = !missing.is_empty();
        let mut headers: Vec<&str> = HEADERS.to_vec();
        if with_unwound {
            headers.push("unwound");
        }
        if with_missing {
            headers.push("lost children");
        }
        if with_dumps {
            headers.push("dumps");
        }
        let cells: Vec<Vec<String>> = scope
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.name.clone(),
                    r.calls.to_string(),
                    human(r.total_ns as f64),
                    human(r.self_ns as f64),
                    format!("{:.1}%", r.share * 100.0),
                    human(r.min_ns as f64),
                    human(r.mean_ns),
                    human(r.p50_ns as f64),
                    human(r.p90_ns as f64),
                    human(r.p99_ns as f64),
                    human(r.max_ns as f64),
                    human(r.stddev_ns),
                ];
                if with_unwound {
                    row.push(r.unwound.to_string());
                }
                if with_missing {
                    row.push(r.missing_children.to_string());
                }
                if with_dumps {
                    row.push(r.dumps.unwrap_or(0).to_string());
                }
                row
            })
            .collect();
        let widths: Vec<usize> = (0..headers.len())
            .map(|c| cells.iter().map(|row| row[c].chars().count()).chain([headers[c].len()]).max().unwrap_or(0))
            .collect();
        let line = |cols: Vec<&str>, out: &mut dyn Write| -> io::Result<()> {
            for (c, text) in cols.iter().enumerate() {
                let pad = widths[c] - text.chars().count();
                if c == 0 {
                    write!(out, "{text}{}", " ".repeat(pad))?;
                } else {
                    write!(out, "  {}{text}", " ".repeat(pad))?;
                }
            }
            writeln!(out)
        };
        write!(out, "{bold}")?;
        line(headers, out)?;
        write!(out, "{plain}")?;
        for row in &cells {
            line(row.iter().map(String::as_str).collect(), out)?;
        }
    }
    Ok(())
}

/// `text` as one CSV field: quoted when it holds a comma, a quote or a newline.
pub(super) fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

fn write_csv(scopes: &[Scope], out: &mut dyn Write) -> io::Result<()> {
    let with_dumps = scopes.iter().flat_map(|s| &s.rows).any(|r| r.dumps.is_some());
    let with_unwound = scopes.iter().flat_map(|s| &s.rows).any(|r| r.unwound > 0);
    let with_missing = scopes.iter().flat_map(|s| &s.rows).any(|r| r.missing_children > 0);
    writeln!(
        out,
        "scope,function,calls,total_ns,self_ns,self_share,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,max_ns,stddev_ns{}{}{}",
        if with_unwound { ",unwound" } else { "" },
        if with_missing { ",calls_missing_children" } else { "" },
        if with_dumps { ",dumps" } else { "" }
    )?;
    for scope in scopes {
        for r in &scope.rows {
            writeln!(
                out,
                "{},{},{},{},{},{:.6},{},{:.0},{},{},{},{},{:.0}{}{}{}",
                csv_field(&scope.name),
                csv_field(&r.name),
                r.calls,
                r.total_ns,
                r.self_ns,
                r.share,
                r.min_ns,
                r.mean_ns,
                r.p50_ns,
                r.p90_ns,
                r.p99_ns,
                r.max_ns,
                r.stddev_ns,
                if with_unwound { format!(",{}", r.unwound) } else { String::new() },
                if with_missing { format!(",{}", r.missing_children) } else { String::new() },
                r.dumps.map_or(String::new(), |d| format!(",{d}"))
            )?;
        }
    }
    Ok(())
}

fn write_json(scopes: &[Scope], out: &mut dyn Write) -> io::Result<()> {
    let value: Vec<serde_json::Value> = scopes
        .iter()
        .map(|s| {
            let rows: Vec<serde_json::Value> = s
                .rows
                .iter()
                .map(|r| {
                    let mut row = serde_json::json!({
                        "function": r.name, "calls": r.calls, "total_ns": r.total_ns, "self_ns": r.self_ns,
                        "self_share": r.share, "min_ns": r.min_ns, "mean_ns": r.mean_ns.round() as u64,
                        "p50_ns": r.p50_ns, "p90_ns": r.p90_ns, "p99_ns": r.p99_ns, "max_ns": r.max_ns,
                        "stddev_ns": r.stddev_ns.round() as u64, "outliers": r.outliers,
                    });
                    if let Some(dumps) = r.dumps {
                        row["dumps"] = dumps.into();
                    }
                    if r.unwound > 0 || r.missing_children > 0 {
                        row["losses"] = serde_json::json!({
                            "unwound": r.unwound, "calls_missing_children": r.missing_children,
                        });
                    }
                    row
                })
                .collect();
            let calibration =
                s.calibration.map(|c| serde_json::json!({"per_span_ns": c.read_ns, "per_nested_span_ns": c.span_ns}));
            let mut scope = serde_json::json!({
                "scope": s.name, "total_ns": s.total_ns, "calibration": calibration, "cleaned": s.cleaned,
                "losses": s.losses.to_json(), "functions": rows,
            });
            if let Some((options, filtered)) = &s.filter {
                scope["filter"] = filtered.to_json(options);
            }
            scope
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::from)?; // keeps an I/O error's kind (a closed pipe)
    writeln!(out)
}

/// Nanoseconds in the largest unit that keeps the number at least 1: ns, µs, ms, s, min.
pub(crate) fn human(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns < 60e9 {
        format!("{:.2} s", ns / 1e9)
    } else {
        format!("{:.2} min", ns / 60e9)
    }
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn human_units() {
        assert_eq!(human(999.0), "999 ns");
        assert_eq!(human(1_500.0), "1.50 µs");
        assert_eq!(human(20_000_000.0), "20.00 ms");
        assert_eq!(human(2_500_000_000.0), "2.50 s");
        assert_eq!(human(90e9), "1.50 min");
    }
}
