//! The names of a trace's keys, one slot per distinct key.

use super::SpanName;

/// Every key's name, found by binary search among the trace's sorted keys:
/// a key costs its slot (a [`SpanName`] and the key), not a hash table's
/// entry with its spare capacity (a million keys: 96 MB where the table
/// took 203 MB). A key that is not the trace's is never stored.
#[derive(Debug, Default)]
pub(crate) struct NameTable {
    keys: Vec<u64>,
    names: Vec<Option<SpanName>>,
}

impl NameTable {
    /// Empty slots for `keys`, which are sorted and distinct (`Trace::keys`).
    pub(crate) fn new(keys: &[u64]) -> Self {
        debug_assert!(keys.is_sorted_by(|a, b| a < b), "keys sorted and distinct");
        NameTable { keys: keys.to_vec(), names: keys.iter().map(|_| None).collect() }
    }

    fn slot(&self, key: u64) -> Option<usize> {
        self.keys.binary_search(&key).ok()
    }

    pub(crate) fn get(&self, key: &u64) -> Option<&SpanName> {
        self.slot(*key).and_then(|i| self.names[i].as_ref())
    }

    pub(crate) fn contains_key(&self, key: &u64) -> bool {
        self.get(key).is_some()
    }

    /// Names `key` (a key not in the table is ignored).
    pub(crate) fn insert(&mut self, key: u64, name: SpanName) {
        if let Some(i) = self.slot(key) {
            self.names[i] = Some(name);
        }
    }

    /// Names `key` with `name()` unless it has a name already.
    pub(crate) fn or_insert_with(&mut self, key: u64, name: impl FnOnce() -> SpanName) {
        if let Some(i) = self.slot(key) {
            self.names[i].get_or_insert_with(name);
        }
    }

    /// The names given so far.
    pub(crate) fn values(&self) -> impl Iterator<Item = &SpanName> {
        self.names.iter().flatten()
    }
}
