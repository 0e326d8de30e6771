//! Output file names for a batch: one per dump, named after it, never
//! outside the output directory whatever the dump's path or archive entry
//! name says (`../x`, `/x`, `a/../../b`).

use std::collections::HashSet;

/// Hands out names inside one output directory.
#[derive(Debug, Default)]
pub struct Namer {
    used: HashSet<String>,
}

impl Namer {
    /// The output name for the dump called `source` (a path or
    /// `archive!entry`), with extension `ext`: the last path component
    /// without `.rtd`, every byte outside `[A-Za-z0-9._-]` replaced by `_`,
    /// no leading dot, cut so the name fits `NAME_MAX`; `-2`, `-3`, … added
    /// when the name is taken.
    pub fn name(&mut self, source: &str, ext: &str) -> String {
        let last = source.rsplit(['/', '\\', '!']).next().unwrap_or("");
        let stem = [".rtd", ".RTD", ".rtw", ".RTW"].iter().find_map(|s| last.strip_suffix(s)).unwrap_or(last);
        let mut clean: String =
            stem.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
        if clean.starts_with('.') {
            clean.insert(0, '_');
        }
        if clean.is_empty() {
            clean.push_str("dump");
        }
        // Room for `-N` (21 bytes at most) and `.ext`; the name is ASCII by now, so any cut is on a boundary.
        clean.truncate(crate::io::NAME_MAX.saturating_sub(ext.len() + 1 + 21).max(1));
        let mut name = format!("{clean}.{ext}");
        let mut n = 2;
        while !self.used.insert(name.clone()) {
            name = format!("{clean}-{n}.{ext}");
            n += 1;
        }
        name
    }
}

#[cfg(test)]
mod tests {
    use super::Namer;

    #[test]
    fn names_stay_inside_and_never_collide() {
        let mut n = Namer::default();
        assert_eq!(n.name("fleet/host1/app.rtd", "json"), "app.json");
        assert_eq!(n.name("other/app.rtd", "json"), "app-2.json");
        assert_eq!(n.name("a.tar.gz!../x.rtd", "json"), "x.json");
        assert_eq!(n.name("a.tar!/x.rtd", "json"), "x-2.json");
        assert_eq!(n.name("a.tar!..", "json"), "_...json");
        assert_eq!(n.name("a.tar!dir/", "json"), "dump.json");
        assert_eq!(n.name("a.tar!we ird\u{1F600}.rtd", "json"), "we_ird_.json");
        let long = format!("a.tar!{}.rtd", "x".repeat(300));
        assert!(n.name(&long, "json").len() <= 255);
        assert!(n.name(&long, "json").ends_with("-2.json"));
        for name in n.used.iter() {
            assert!(!name.contains('/') && !name.starts_with('.'), "{name}");
        }
    }
}
