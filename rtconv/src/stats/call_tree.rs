//! `rtconv stats --tree`: the call tree, as utl::profiler shows it — every
//! distinct call path with its calls, total and self time, children under
//! their parents, longest first.

use std::collections::HashMap;

use crate::model::{Anomalies, Timeline};

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

/// Calls, total and self time of one call path.
#[derive(Clone, Copy, Default)]
struct PathTotals {
    calls: u64,
    total_ns: u64,
    self_ns: u64,
}

/// The trees of `tl`: one over all threads, or one per thread; with
/// `calibrated`, the recorder's own cost taken out (see [`Timeline::walk`]).
/// Also what its spans had wrong with them.
pub fn call_tree(tl: &Timeline<'_>, per_thread: bool, calibrated: bool) -> (Vec<Tree>, Anomalies) {
    let cost = if calibrated { tl.recorder_cost() } else { None };
    // Per scope: its name, top-level time, and totals per call path (key indices from the root).
    let mut scopes: Vec<(String, u64, HashMap<Vec<u32>, PathTotals>)> =
        tl.scope_names(per_thread).into_iter().map(|name| (name, 0, HashMap::new())).collect();
    let found = tl.walk(cost, |v| {
        let Some((_, total, paths)) = scopes.get_mut(if per_thread { v.thread } else { 0 }) else { return };
        if v.path.len() == 1 {
            *total += v.duration;
        }
        // Deeper than 512 levels, spans merge into one `[deeper]` node under their ancestors.
        let entry = paths.entry(v.capped_path()).or_default();
        entry.calls += 1;
        entry.total_ns += v.duration;
        entry.self_ns += v.self_ns;
    });
    let name_of = |key_index: u32| tl.name(key_index as usize).to_string();
    let trees = scopes
        .into_iter()
        .map(|(scope, total_ns, paths)| {
            // Parents before children: sort the paths, then attach each to its parent.
            let mut sorted: Vec<(Vec<u32>, PathTotals)> = paths.into_iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let mut roots: Vec<Node> = Vec::new();
            for (path, totals) in sorted {
                let node = Node {
                    name: name_of(*path.last().unwrap_or(&0)),
                    calls: totals.calls,
                    total_ns: totals.total_ns,
                    self_ns: totals.self_ns,
                    children: Vec::new(),
                };
                insert(&mut roots, &path, node);
            }
            order(&mut roots);
            Tree { scope, total_ns, roots }
        })
        .collect();
    (trees, found)
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
