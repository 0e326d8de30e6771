//! Nesting never depends on a tie of timestamps: the `tree` sample records a
//! known call tree with its counter cut to steps of 2^20 ticks (most spans
//! start and end on the same tick), with the fine counter, and under
//! `qemu-aarch64` (a counter moving in 1 µs steps); every output —
//! the call tree of `stats`, the ftrace function graph, Chrome B/E events and
//! systrace — shows the tree the program made, thread by thread, because
//! rtconv nests by the depth each record's key carries and the ring's order.
//! (Chrome `X` events state nesting only by time: a viewer nests two spans
//! of equal start and length as it likes.) The spans marked as having lost
//! children to an overwriting ring are found by that order too: the oldest
//! span kept and its callers, whatever their ticks.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use ringtrace_tests::{binary, rtconv_ok, scratch};

/// Calls per call path ("thread: a > b > c").
type Tree = BTreeMap<String, u64>;

/// What `samples/src/bin/tree.rs` records.
fn expected() -> Tree {
    let mut t = Tree::new();
    for (path, calls) in [
        ("main: root", 50),
        ("main: root > a", 150),
        ("main: root > a > b", 300),
        ("main: root > a > b > c", 600),
        ("main: root > d", 50),
        ("main: root > d > d", 50),
        ("main: root > d > d > d", 50),
        ("main: root > d > d > d > d", 50),
        ("loop-16: tick", 16),
        ("nest-16: outer", 1),
        ("nest-16: outer > mid", 5),
        ("nest-16: outer > mid > leaf", 10),
    ] {
        t.insert(path.to_string(), calls);
    }
    t
}

/// Adds one call of `stack` (thread first) to `tree`.
fn count(tree: &mut Tree, thread: &str, stack: &[String]) {
    *tree.entry(format!("{thread}: {}", stack.join(" > "))).or_default() += 1;
}

/// The tree `stats --tree --per-thread -f json` shows.
fn from_stats(dump: &Path) -> Tree {
    fn walk(tree: &mut Tree, thread: &str, path: &mut Vec<String>, node: &serde_json::Value) {
        path.push(node["function"].as_str().unwrap().to_string());
        *tree.entry(format!("{thread}: {}", path.join(" > "))).or_default() += node["calls"].as_u64().unwrap();
        for child in node["children"].as_array().unwrap() {
            walk(tree, thread, path, child);
        }
        path.pop();
    }
    let json: serde_json::Value =
        serde_json::from_str(&rtconv_ok(&["stats", "--tree", "--per-thread", "-f", "json", dump.to_str().unwrap()]))
            .unwrap();
    let mut tree = Tree::new();
    for scope in json.as_array().unwrap() {
        let thread = scope["scope"].as_str().unwrap().to_string();
        for node in scope["calls"].as_array().unwrap() {
            walk(&mut tree, &thread, &mut Vec::new(), node);
        }
    }
    tree
}

/// The tree of the ftrace function graph: `f() {` opens, `}` closes, `f();` is a leaf.
fn from_ftrace(dump: &Path) -> Tree {
    let text = rtconv_ok(&["convert", "-f", "ftrace", "-o", "-", dump.to_str().unwrap()]);
    let mut tree = Tree::new();
    let mut stack: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && l.matches('|').count() >= 2) {
        let mut fields = line.splitn(3, '|');
        let task = fields.next().unwrap().trim_start().trim_start_matches(|c: char| c.is_ascii_digit() || c == ')');
        let thread = task.trim().rsplit_once('-').map_or(task.trim(), |(name, _)| name);
        let call = fields.nth(1).unwrap().trim().split(" /*").next().unwrap();
        if let Some(name) = call.strip_suffix("() {") {
            stack.push(name.to_string());
            count(&mut tree, thread, &stack);
        } else if let Some(name) = call.strip_suffix("();") {
            stack.push(name.to_string());
            count(&mut tree, thread, &stack);
            stack.pop();
        } else if call == "}" {
            stack.pop();
        }
    }
    tree
}

/// Chrome JSON's thread names, by thread id.
fn thread_names(events: &[serde_json::Value]) -> BTreeMap<u64, String> {
    events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["tid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_string()))
        .collect()
}

/// The tree of Chrome JSON written as B/E events.
fn from_chrome_be(dump: &Path) -> Tree {
    let json: serde_json::Value =
        serde_json::from_str(&rtconv_ok(&["convert", "--chrome-events", "be", "-o", "-", dump.to_str().unwrap()]))
            .unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let names = thread_names(events);
    let (mut tree, mut stacks) = (Tree::new(), BTreeMap::<u64, Vec<String>>::new());
    for e in events {
        let tid = e["tid"].as_u64().unwrap_or(0);
        let stack = stacks.entry(tid).or_default();
        match e["ph"].as_str() {
            Some("B") => {
                stack.push(e["name"].as_str().unwrap().to_string());
                count(&mut tree, &names[&tid], stack);
            }
            Some("E") => assert_eq!(stack.pop().as_deref(), e["name"].as_str(), "E ends the innermost B"),
            _ => {}
        }
    }
    tree
}

/// The tree of systrace's `B|pid|name` and `E|pid` marks.
fn from_systrace(dump: &Path) -> Tree {
    let text = rtconv_ok(&["convert", "-f", "systrace", "-o", "-", dump.to_str().unwrap()]);
    let (mut tree, mut stacks) = (Tree::new(), BTreeMap::<String, Vec<String>>::new());
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((task, mark)) = line.split_once("tracing_mark_write: ") else { continue };
        let task = task.split_whitespace().next().unwrap();
        let thread = task.rsplit_once('-').map_or(task, |(name, _)| name).to_string();
        let stack = stacks.entry(thread.clone()).or_default();
        if let Some(rest) = mark.strip_prefix("B|") {
            stack.push(rest.split_once('|').unwrap().1.to_string());
            count(&mut tree, &thread, stack);
        } else if mark.starts_with("E|") {
            stack.pop();
        }
    }
    tree
}

/// Per "thread: function", the spans Chrome JSON marks `missing_children`.
fn marked_missing_children(dump: &Path) -> Tree {
    let json: serde_json::Value =
        serde_json::from_str(&rtconv_ok(&["convert", "-o", "-", dump.to_str().unwrap()])).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let names = thread_names(events);
    let mut marked = Tree::new();
    for e in events.iter().filter(|e| e["ph"] == "X" && e["args"]["missing_children"] == true) {
        let thread = &names[&e["tid"].as_u64().unwrap()];
        *marked.entry(format!("{thread}: {}", e["name"].as_str().unwrap())).or_default() += 1;
    }
    marked
}

pub(crate) fn check_every_output(dump: &Path, what: &str) {
    let want = expected();
    assert_eq!(from_stats(dump), want, "{what}: stats --tree");
    assert_eq!(from_ftrace(dump), want, "{what}: ftrace");
    assert_eq!(from_chrome_be(dump), want, "{what}: Chrome B/E");
    assert_eq!(from_systrace(dump), want, "{what}: systrace");
    // The oldest span each overwriting ring kept, and its callers: the loop's first `tick`, and
    // the nest's first `leaf` kept, its `mid` and `outer` (each began before that leaf ended).
    let marked: Tree = [("loop-16: tick", 1), ("nest-16: leaf", 1), ("nest-16: mid", 1), ("nest-16: outer", 1)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(marked_missing_children(dump), marked, "{what}: Chrome JSON's missing_children");
    assert_eq!(stats_missing_children(dump), marked, "{what}: stats' calls_missing_children");
}

/// Per "thread: function", `stats --per-thread`'s calls missing children (the walk straight
/// from the ring, where Chrome JSON's come from the decoding in start order).
fn stats_missing_children(dump: &Path) -> Tree {
    let json: serde_json::Value =
        serde_json::from_str(&rtconv_ok(&["stats", "--per-thread", "-f", "json", dump.to_str().unwrap()])).unwrap();
    let mut marked = Tree::new();
    for scope in json.as_array().unwrap() {
        for f in scope["functions"].as_array().unwrap() {
            let n = f["losses"]["calls_missing_children"].as_u64().unwrap_or(0); // no losses: no field
            if n > 0 {
                marked.insert(format!("{}: {}", scope["scope"].as_str().unwrap(), f["function"].as_str().unwrap()), n);
            }
        }
    }
    marked
}

#[test]
fn a_coarse_counter_leaves_the_tree_as_the_program_made_it() {
    let dir = scratch("nesting");
    for clock in ["fine", "coarse"] {
        let dump = dir.join(format!("{clock}.rtd"));
        let out = Command::new(binary("tree")).arg(clock).arg(&dump).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        check_every_output(&dump, clock);
    }
}
