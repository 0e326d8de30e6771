//! `rtconv stats --tree`: the call tree, as utl::profiler shows it — every
//! distinct call path with its calls, total and self time and its share of
//! the scope's time, children under their parents, longest first.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::stats::{Output, human};
use crate::timeline::Timeline;

/// One call path.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// The innermost function of the path.
    pub name: String,
    /// Calls along exactly this path.
    pub calls: u64,
    /// Their inclusive time.
    pub total_ns: u64,
    /// Their exclusive time.
    pub self_ns: u64,
    /// Paths one call deeper, longest total first.
    pub children: Vec<Node>,
}

/// One scope's tree: a thread, or all threads merged.
#[derive(Clone, Debug)]
pub struct Tree {
    /// `all threads`, or the thread's name (or `thread TID`).
    pub scope: String,
    /// Total time of the top-level spans.
    pub total_ns: u64,
    /// Top-level paths.
    pub roots: Vec<Node>,
}

/// Calls, total and self time per call path (key indices from the root).
type Paths = HashMap<Vec<u32>, (u64, u64, u64)>;

/// Builds the trees of `tl`: one over all threads, or one per thread;
/// with `calibrated`, the recorder's own cost taken out (see `Timeline::walk`).
pub fn build(tl: &Timeline<'_>, per_thread: bool, calibrated: bool) -> Vec<Tree> {
    let costs = if calibrated { tl.recorder_costs() } else { None };
    let mut scopes: Vec<(String, u64, Paths)> =
        tl.scope_names(per_thread).into_iter().map(|name| (name, 0, HashMap::new())).collect();
    tl.walk(costs, |v| {
        let Some((_, total, paths)) = scopes.get_mut(if per_thread { v.thread } else { 0 }) else { return };
        if v.path.len() == 1 {
            *total += v.duration;
        }
        let entry = paths.entry(v.path.to_vec()).or_default();
        entry.0 += 1;
        entry.1 += v.duration;
        entry.2 += v.self_ns;
    });
    let name_of = |key_index: u32| tl.name(key_index as usize).to_string();
    scopes
        .into_iter()
        .map(|(scope, total_ns, paths)| {
            // Parents before children: sort the paths, then attach each to its parent.
            let mut sorted: Vec<(Vec<u32>, (u64, u64, u64))> = paths.into_iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let mut roots: Vec<Node> = Vec::new();
            for (path, (calls, total, self_ns)) in sorted {
                let node = Node {
                    name: name_of(*path.last().unwrap_or(&0)),
                    calls,
                    total_ns: total,
                    self_ns,
                    children: Vec::new(),
                };
                insert(&mut roots, &path, node);
            }
            order(&mut roots);
            Tree { scope, total_ns, roots }
        })
        .collect()
}

/// Puts `node` (whose path is `path`) under the node of `path`'s prefix; the
/// prefix is already there because paths arrive sorted.
fn insert(level: &mut Vec<Node>, path: &[u32], node: Node) {
    // Within one level, children are kept in path order until `order` sorts them,
    // so the parent of a sorted path is the last node at each level.
    match path {
        [_] | [] => level.push(node),
        [_, rest @ ..] => match level.last_mut() {
            Some(parent) => insert(&mut parent.children, rest, node),
            None => level.push(node),
        },
    }
}

fn order(level: &mut [Node]) {
    level.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| a.name.cmp(&b.name)));
    for node in level {
        order(&mut node.children);
    }
}

/// Writes the trees as an indented table, CSV (the path joined by `;`) or nested JSON.
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
    let quoted =
        |t: &str| if t.contains([',', '"']) { format!("\"{}\"", t.replace('"', "\"\"")) } else { t.to_string() };
    writeln!(out, "{},{},{},{},{}", quoted(scope), quoted(&path), node.calls, node.total_ns, node.self_ns)?;
    for child in &node.children {
        write_csv(child, scope, &path, out)?;
    }
    Ok(())
}
