//! A batch's progress on stderr: a bar when stderr is a terminal (and not
//! `--quiet`), with each diagnostic printed above it as it comes.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use rtconv::batch::{Observer, Summary};
use rtconv::convert::Diagnostic;

use super::diag;

/// The observer every batch command runs with (one batch after another:
/// `rtconv diff` runs one per side).
pub struct Progress {
    /// Whether to draw a bar at all.
    shown: bool,
    /// The running batch's bar, made when it starts and knows its size.
    bar: Mutex<Option<indicatif::ProgressBar>>,
}

impl Progress {
    /// A bar unless `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool) -> Self {
        Progress { shown: !quiet && std::io::stderr().is_terminal(), bar: Mutex::new(None) }
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<indicatif::ProgressBar>> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Observer for Progress {
    fn start(&self, total_bytes: u64) {
        if !self.shown {
            return;
        }
        *self.bar() = Some({
            let bar = indicatif::ProgressBar::new(total_bytes);
            let style = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {binary_bytes}/{binary_total_bytes} \
                 {binary_bytes_per_sec} ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
    }

    fn diagnostic(&self, diagnostic: Diagnostic) {
        match &*self.bar() {
            Some(bar) => bar.suspend(|| diag::print(&diagnostic)),
            None => diag::print(&diagnostic),
        }
    }

    fn advance(&self, consumed_bytes: u64, summary: &Summary) {
        if let Some(bar) = &*self.bar() {
            bar.set_position(consumed_bytes);
            bar.set_message(format!("{} dumps, {} failed", summary.converted + summary.salvaged, summary.failed));
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }
}
