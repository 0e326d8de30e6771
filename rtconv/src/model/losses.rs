//! What a run did not record whole, per thread: the story every output tells.

use super::trace::{ThreadTrace, Trace};

/// Spans a thread's ring does not hold as they happened, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Losses {
    /// Recorded, then overwritten by newer spans (flight recorder).
    pub overwritten: u64,
    /// Not recorded because the ring was full (stop-when-full mode), or the
    /// stream's writer could not keep up.
    pub dropped: u64,
    /// Recorded, but left without their exit (a `longjmp`, an exception
    /// through C frames): they end where the recorder noticed.
    pub unwound: u64,
    /// Still running at dump time: they end at the dump.
    pub open: u64,
    /// Calls the `-finstrument-functions` hooks did not record: nested
    /// deeper than their shadow stack.
    pub too_deep: u64,
    /// Calls whose exit never came, dropped by recorders before 1.3 (now recorded as unwound).
    pub abandoned: u64,
}

impl Losses {
    /// Whether nothing was lost or cut short.
    pub fn is_empty(&self) -> bool {
        *self == Losses::default()
    }

    /// As JSON: every cause, zeros too, so readers need no defaults.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "overwritten": self.overwritten, "dropped": self.dropped, "unwound": self.unwound,
            "open": self.open, "too_deep": self.too_deep, "abandoned": self.abandoned,
        })
    }

    /// The nonzero causes as `3 overwritten, 2 unwound`, or `none`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = [
            (self.overwritten, "overwritten"),
            (self.dropped, "dropped"),
            (self.unwound, "unwound"),
            (self.open, "open"),
            (self.too_deep, "too deep"),
            (self.abandoned, "abandoned"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() { "none".into() } else { parts.join(", ") }
    }
}

impl std::ops::AddAssign for Losses {
    fn add_assign(&mut self, o: Losses) {
        // Saturating: the counts come from the dump, which may claim anything.
        self.overwritten = self.overwritten.saturating_add(o.overwritten);
        self.dropped = self.dropped.saturating_add(o.dropped);
        self.unwound = self.unwound.saturating_add(o.unwound);
        self.open = self.open.saturating_add(o.open);
        self.too_deep = self.too_deep.saturating_add(o.too_deep);
        self.abandoned = self.abandoned.saturating_add(o.abandoned);
    }
}

impl Trace<'_> {
    /// Thread `index`'s losses, with what the hooks reported for its tid.
    pub fn thread_losses(&self, index: usize) -> Losses {
        let Some(t) = self.threads.get(index) else { return Losses::default() };
        let mut losses = ring_losses(t);
        for u in self.unbalanced.iter().filter(|u| u.tid == t.tid) {
            losses.too_deep = losses.too_deep.saturating_add(u.too_deep);
            losses.abandoned = losses.abandoned.saturating_add(u.abandoned);
        }
        losses
    }

    /// Every thread's losses added up.
    pub fn losses(&self) -> Losses {
        let mut all = Losses::default();
        for i in 0..self.threads.len() {
            all += self.thread_losses(i);
        }
        all
    }
}

fn ring_losses(t: &ThreadTrace<'_>) -> Losses {
    Losses {
        overwritten: t.overwritten(),
        dropped: t.dropped,
        unwound: t.unwound,
        open: t.open_count() as u64,
        too_deep: 0,
        abandoned: 0,
    }
}
