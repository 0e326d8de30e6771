//! Protocol buffers' wire format, for the outputs that are protobuf
//! messages (`-f perfetto`, `-f pprof`): a message built in a buffer,
//! field by field.

/// A message being encoded.
#[derive(Default)]
pub(super) struct Message(pub(super) Vec<u8>);

/// Appends `v` to `buf` as a varint.
#[inline(always)]
pub(super) fn push_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Message {
    /// A varint.
    pub(super) fn varint(&mut self, v: u64) {
        push_varint(&mut self.0, v);
    }

    /// A varint field (any integer, bool or enum).
    pub(super) fn uint(&mut self, field: u32, v: u64) {
        self.varint(u64::from(field) << 3);
        self.varint(v);
    }

    /// A length-delimited field: bytes, a string.
    pub(super) fn bytes(&mut self, field: u32, b: &[u8]) {
        self.varint(u64::from(field) << 3 | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// A nested message.
    pub(super) fn message(&mut self, field: u32, m: &Message) {
        self.bytes(field, &m.0);
    }

    /// A packed repeated varint field.
    pub(super) fn packed(&mut self, field: u32, values: impl IntoIterator<Item = u64>) {
        let mut inner = Message::default();
        for v in values {
            inner.varint(v);
        }
        self.bytes(field, &inner.0);
    }
}
