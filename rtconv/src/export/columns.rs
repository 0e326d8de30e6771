//! Tables as plain columns: what `rtconv export` writes as Parquet and the
//! Python package hands to pyarrow, in no library's types, so each writer
//! maps them to its own (`export::parquet`; `rtconv/python`'s Arrow arrays).

use std::sync::Arc;

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Strings that repeat (hosts, builds, functions): dictionary-encoded.
    Words,
    /// Strings that do not repeat.
    Text,
    /// Unsigned 32-bit integers.
    U32,
    /// Unsigned 64-bit integers.
    U64,
    /// Signed 64-bit integers.
    I64,
    /// 64-bit floating point.
    F64,
    /// Booleans.
    Bool,
}

/// A column of a table's schema.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// Its name.
    pub name: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// Whether a row may have no value (SQL's null).
    pub nullable: bool,
}

impl Field {
    /// A column that always has a value.
    pub const fn new(name: &'static str, kind: Kind) -> Field {
        Field { name, kind, nullable: false }
    }

    /// A column whose rows may have no value.
    pub const fn nullable(name: &'static str, kind: Kind) -> Field {
        Field { name, kind, nullable: true }
    }
}

/// One column's values for a run of rows.
#[derive(Clone, Debug)]
pub enum Values {
    /// [`Kind::Words`]: each row an index into `words`.
    Words {
        /// The distinct strings.
        words: Arc<[String]>,
        /// Per row: its string's index in `words`.
        keys: Vec<u32>,
    },
    /// [`Kind::Text`].
    Text(Vec<String>),
    /// [`Kind::U32`].
    U32(Vec<u32>),
    /// [`Kind::U64`].
    U64(Vec<u64>),
    /// [`Kind::I64`].
    I64(Vec<i64>),
    /// [`Kind::F64`].
    F64(Vec<f64>),
    /// [`Kind::Bool`].
    Bool(Vec<bool>),
}

/// One column's values for a run of rows, and which rows have one.
#[derive(Clone, Debug)]
pub struct Column {
    /// Per row; where a row has no value its entry is a placeholder (0, "", key 0).
    pub values: Values,
    /// Per row: whether it has a value. `None`: every row has one.
    pub valid: Option<Vec<bool>>,
}

impl Column {
    /// A column every row of which has a value.
    pub fn new(values: Values) -> Column {
        Column { values, valid: None }
    }

    /// A column from per-row options: `None` rows have no value.
    pub fn options<T: Default + Copy>(rows: &[Option<T>], values: impl FnOnce(Vec<T>) -> Values) -> Column {
        let valid = rows.iter().map(Option::is_some).collect::<Vec<bool>>();
        let plain = rows.iter().map(|v| v.unwrap_or_default()).collect();
        Column { values: values(plain), valid: (!valid.iter().all(|&v| v)).then_some(valid) }
    }

    /// Its values emptied for new rows, of kind `T` (made so if they were of another), every row
    /// with a value: a batch's column refilled in its own buffer.
    pub fn refill<T: Buffer>(&mut self) -> &mut Vec<T> {
        self.valid = None;
        if T::of(&mut self.values).is_none() {
            self.values = T::wrap(Vec::new());
        }
        let values = T::of(&mut self.values).expect("made of kind T above");
        values.clear();
        values
    }

    /// Its keys emptied for new rows of `words` (see [`refill`](Self::refill)).
    pub fn refill_words(&mut self, words: &Arc<[String]>) -> &mut Vec<u32> {
        self.valid = None;
        match &mut self.values {
            Values::Words { words: w, keys } => {
                if !Arc::ptr_eq(w, words) {
                    *w = words.clone();
                }
                keys.clear();
            }
            values => *values = Values::Words { words: words.clone(), keys: Vec::new() },
        }
        match &mut self.values {
            Values::Words { keys, .. } => keys,
            _ => unreachable!("made words above"),
        }
    }

    /// Whether it holds `n` rows of the one word of `words` (`null`: `n` rows without a value):
    /// a batch's column of a dump's constant that needs no refilling.
    pub fn holds_same(&self, words: &Arc<[String]>, n: usize, null: bool) -> bool {
        let Values::Words { words: w, keys } = &self.values else { return false };
        let valid = match &self.valid {
            None => !null,
            Some(valid) => null && valid.len() == n && all_equal(valid, false),
        };
        Arc::ptr_eq(w, words) && keys.len() == n && valid && all_equal(keys, 0)
    }

    /// Sets which of its rows have a value from `valid` (`None`: every row).
    pub fn set_valid(&mut self, valid: Option<impl Iterator<Item = bool>>) {
        self.valid = valid.map(Iterator::collect);
    }

    /// Row `i`'s value as text, `null` where it has none.
    #[cfg(test)]
    pub(crate) fn text(&self, i: usize) -> String {
        match &self.values {
            _ if !self.is_valid(i) => "null".to_owned(),
            Values::Words { words, keys } => words[keys[i] as usize].clone(),
            Values::U32(v) => v[i].to_string(),
            Values::U64(v) => v[i].to_string(),
            Values::I64(v) => v[i].to_string(),
            Values::Bool(v) => v[i].to_string(),
            Values::Text(v) => v[i].clone(),
            Values::F64(v) => v[i].to_string(),
        }
    }

    /// Its number of rows.
    pub fn len(&self) -> usize {
        match &self.values {
            Values::Words { keys, .. } => keys.len(),
            Values::Text(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether row `i` has a value.
    pub fn is_valid(&self, i: usize) -> bool {
        self.valid.as_ref().is_none_or(|v| v[i])
    }

    /// The kind of its values.
    pub fn kind(&self) -> Kind {
        match &self.values {
            Values::Words { .. } => Kind::Words,
            Values::Text(_) => Kind::Text,
            Values::U32(_) => Kind::U32,
            Values::U64(_) => Kind::U64,
            Values::I64(_) => Kind::I64,
            Values::F64(_) => Kind::F64,
            Values::Bool(_) => Kind::Bool,
        }
    }
}

/// A kind of [`Values`] held in a `Vec` a column can be refilled in ([`Column::refill`]).
pub trait Buffer: Sized {
    /// `values`' buffer, if they are of this kind.
    fn of(values: &mut Values) -> Option<&mut Vec<Self>>;
    /// `buffer` as values.
    fn wrap(buffer: Vec<Self>) -> Values;
}

macro_rules! buffer {
    ($($t:ty => $kind:ident),*) => {$(
        impl Buffer for $t {
            fn of(values: &mut Values) -> Option<&mut Vec<$t>> {
                match values {
                    Values::$kind(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(buffer: Vec<$t>) -> Values {
                Values::$kind(buffer)
            }
        }
    )*};
}

buffer!(u32 => U32, u64 => U64, i64 => I64, bool => Bool);

/// Whether every one of `values` is `value`: a vectorized pass, blocks at a time, that stops at
/// the first block that differs.
pub fn all_equal<T: Copy + PartialEq>(values: &[T], value: T) -> bool {
    values.chunks(64).all(|block| block.iter().fold(true, |same, &v| same & (v == value)))
}

/// Rows of one table: a column per field of its schema, in order, of the same length.
pub type Batch = Vec<Column>;

/// `n` empty columns, each to be refilled ([`Column::refill`]) with its own kind.
pub fn placeholders(n: usize) -> Batch {
    (0..n).map(|_| Column::new(Values::Bool(Vec::new()))).collect()
}

/// The number of rows of `batch`.
pub fn rows(batch: &[Column]) -> usize {
    batch.first().map_or(0, Column::len)
}

/// A batch that does not fit its table's fields (a bug in the code that made it).
#[derive(Debug, thiserror::Error)]
#[error("column {column}: {what}")]
pub struct Unfit {
    /// The column, by its field's name (`-` when the batch has too few or too many).
    pub column: &'static str,
    /// What is wrong with it.
    pub what: &'static str,
}

/// Checks that `batch` fits `fields`: a column per field, in order, of the
/// field's kind, all of the same length, values only where the field allows
/// none, and each word's key within its dictionary.
pub fn check(fields: &[Field], batch: &[Column]) -> Result<(), Unfit> {
    let unfit = |column, what| Err(Unfit { column, what });
    if fields.len() != batch.len() {
        return unfit("-", "a column per field");
    }
    let n = rows(batch);
    for (field, column) in fields.iter().zip(batch) {
        if column.kind() != field.kind {
            return unfit(field.name, "the field's kind");
        }
        if column.len() != n || column.valid.as_ref().is_some_and(|v| v.len() != n) {
            return unfit(field.name, "as many rows as the others");
        }
        if !field.nullable && column.valid.as_ref().is_some_and(|v| v.contains(&false)) {
            return unfit(field.name, "a value in every row");
        }
        if let Values::Words { words, keys } = &column.values
            && keys.iter().enumerate().any(|(i, &k)| column.is_valid(i) && k as usize >= words.len())
        {
            return unfit(field.name, "keys within its words");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_fits_its_fields_or_says_which_column_does_not() {
        let fields = [Field::new("f", Kind::Words), Field::nullable("line", Kind::U32)];
        let words = |keys| Column::new(Values::Words { words: vec!["a".to_owned(), "b".to_owned()].into(), keys });
        let good = vec![words(vec![0, 1, 1]), Column::options(&[Some(3), None, Some(4)], Values::U32)];
        assert!(check(&fields, &good).is_ok());
        assert_eq!(good[1].valid, Some(vec![true, false, true]));
        assert!(Column::options(&[Some(1u32)], Values::U32).valid.is_none(), "no validity when every row has a value");

        let column = |batch: &[Column]| check(&fields, batch).err().map(|e| (e.column, e.what));
        assert_eq!(column(&good[..1]), Some(("-", "a column per field")));
        let out_of_range = vec![words(vec![0, 2, 1]), good[1].clone()];
        assert_eq!(column(&out_of_range), Some(("f", "keys within its words")));
        let short = vec![words(vec![0, 1]), good[1].clone()];
        assert_eq!(column(&short), Some(("line", "as many rows as the others")));
        let none =
            Column { values: Values::Words { words: Arc::from([]), keys: vec![0; 3] }, valid: Some(vec![false; 3]) };
        let null_word = vec![none, good[1].clone()];
        assert_eq!(column(&null_word), Some(("f", "a value in every row")));
        let kind = vec![good[1].clone(), good[1].clone()];
        assert_eq!(column(&kind), Some(("f", "the field's kind")));
    }
}
