//! Diagnostics on stderr, `rtconv: error: …` and `rtconv: warning: …`, with
//! the level in color when asked (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`).

use std::borrow::Cow;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use rtconv::convert::Diagnostic;

static COLOR: AtomicBool = AtomicBool::new(false);

/// When to color.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// On a terminal, unless `NO_COLOR` is set (or `CLICOLOR_FORCE` forces it).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl When {
    /// Whether output to a stream that `is_terminal` or not gets color.
    pub fn colors(self, is_terminal: bool) -> bool {
        let set = |name| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
        match self {
            When::Always => true,
            When::Never => false,
            When::Auto if set("NO_COLOR") => false,
            When::Auto if set("CLICOLOR_FORCE") => true,
            When::Auto => is_terminal && std::env::var_os("TERM").is_none_or(|t| t != "dumb"),
        }
    }

    /// Whether standard output gets color.
    pub fn stdout(self) -> bool {
        self.colors(std::io::stdout().is_terminal())
    }
}

/// Sets whether diagnostics are colored, from `when` and whether stderr is a terminal.
pub fn set_color(when: When) {
    COLOR.store(when.colors(std::io::stderr().is_terminal()), Ordering::Relaxed);
}

/// `line` with its `error:` or `warning:` level colored, when diagnostics are.
fn paint(line: &str) -> Cow<'_, str> {
    if !COLOR.load(Ordering::Relaxed) {
        return Cow::Borrowed(line);
    }
    for (level, style) in [("error:", "\x1b[1;31m"), ("warning:", "\x1b[1;33m")] {
        if let Some(rest) = line.strip_prefix("rtconv: ").and_then(|l| l.strip_prefix(level)) {
            return Cow::Owned(format!("rtconv: {style}{level}\x1b[0m{rest}"));
        }
    }
    Cow::Borrowed(line)
}

/// Prints `line` on stderr, its level colored when diagnostics are.
pub fn emit(line: &str) {
    eprintln!("{}", paint(line));
}

/// Prints a diagnostic of the library's, as `emit` does.
pub fn print(diagnostic: &Diagnostic) {
    emit(&diagnostic.to_string());
}

/// Prints one line of the command line's own: `rtconv: error: MESSAGE`.
pub fn error(message: &str) {
    emit(&format!("rtconv: error: {message}"));
}

/// This rtconv's command line, as a shell takes it (arguments quoted where they need it), without
/// the options named in `without` (each with its value, `--opt V` or `--opt=V`): the command a
/// note adds its own value of them to.
pub fn command_line(without: &[&str]) -> String {
    shell_command(std::env::args(), without)
}

/// `args` (the program first) as [`command_line`] gives them.
fn shell_command(mut args: impl Iterator<Item = String>, without: &[&str]) -> String {
    let quoted = |a: String| {
        if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c)) {
            a
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    let program = args
        .next()
        .map(|p| std::path::Path::new(&p).file_name().map_or(p.clone(), |n| n.to_string_lossy().into_owned()));
    let mut kept = Vec::new();
    while let Some(arg) = args.next() {
        if without.contains(&arg.as_str()) {
            args.next(); // its value
        } else if !without.iter().any(|o| arg.strip_prefix(o).is_some_and(|rest| rest.starts_with('='))) {
            kept.push(quoted(arg));
        }
    }
    program.into_iter().chain(kept).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::shell_command;

    #[test]
    fn the_command_is_quoted_for_a_shell_and_leaves_out_what_the_note_replaces() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>().into_iter();
        let given = args(&["/usr/bin/rtconv", "convert", "a b.rtd", "--max-bytes", "200M", "-o", "t.json"]);
        assert_eq!(shell_command(given, &["--max-bytes"]), "rtconv convert 'a b.rtd' -o t.json");
        let given = args(&["rtconv", "batch", "--max-bytes=1G", "it's", "--max-bytes-x"]);
        assert_eq!(shell_command(given, &["--max-bytes"]), r"rtconv batch 'it'\''s' --max-bytes-x");
        assert_eq!(shell_command(args(&["rtconv", "x", "--max-bytes"]), &["--max-bytes"]), "rtconv x");
    }
}
