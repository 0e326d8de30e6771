//! `rtconv stats --tree` output: the call tree as an indented table, CSV
//! (the path joined by `;`) or nested JSON.

use std::io::{self, Write};

use super::stats_table::{csv_field, human};
use crate::stats::{Node, Output, Tree};

/// Writes the trees ([`crate::stats::call_tree`]) as an indented table, CSV (the path joined by `;`) or nested JSON.
pub fn write(trees: &[Tree], output: Output, out: &mut dyn Write) -> io::Result<()> {
    match output {
        Output::Table => {
            for (i, tree) in trees.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "call tree — {} — {} in top-level spans", tree.scope, human(tree.total_ns as f64))?;
                writeln!(out, "{:>8}  {:>10}  {:>10}  {:>6}  function", "calls", "total", "self", "share")?;
                for node in &tree.roots {
                    write_node(node, 0, tree.total_ns, out)?;
                }
            }
            Ok(())
        }
        Output::Csv => {
            writeln!(out, "scope,path,calls,total_ns,self_ns")?;
            for tree in trees {
                for node in &tree.roots {
                    write_csv(node, &tree.scope, "", out)?;
                }
            }
            Ok(())
        }
        Output::Json => {
            fn json(node: &Node) -> serde_json::Value {
                serde_json::json!({
                    "function": node.name, "calls": node.calls, "total_ns": node.total_ns, "self_ns": node.self_ns,
                    "children": node.children.iter().map(json).collect::<Vec<_>>(),
                })
            }
            let value: Vec<serde_json::Value> = trees
                .iter()
                .map(|t| serde_json::json!({"scope": t.scope, "total_ns": t.total_ns, "calls": t.roots.iter().map(json).collect::<Vec<_>>()}))
                .collect();
            serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::from)?; // keeps an I/O error's kind (a closed pipe)
            writeln!(out)
        }
    }
}

fn write_node(node: &Node, depth: usize, scope_total: u64, out: &mut dyn Write) -> io::Result<()> {
    let share = if scope_total == 0 { 0.0 } else { node.total_ns as f64 * 100.0 / scope_total as f64 };
    writeln!(
        out,
        "{:>8}  {:>10}  {:>10}  {:>5.1}%  {:indent$}{}",
        node.calls,
        human(node.total_ns as f64),
        human(node.self_ns as f64),
        share,
        "",
        node.name,
        indent = depth * 2
    )?;
    for child in &node.children {
        write_node(child, depth + 1, scope_total, out)?;
    }
    Ok(())
}

fn write_csv(node: &Node, scope: &str, parent: &str, out: &mut dyn Write) -> io::Result<()> {
    let path = if parent.is_empty() { node.name.clone() } else { format!("{parent};{}", node.name) };
    writeln!(out, "{},{},{},{},{}", csv_field(scope), csv_field(&path), node.calls, node.total_ns, node.self_ns)?;
    for child in &node.children {
        write_csv(child, scope, &path, out)?;
    }
    Ok(())
}
