//! What the format's integration tests share.

use ringtrace_format::Sink;

/// A dump writer's sink into memory (the crate's `IoSink` needs the `std` feature).
pub struct VecSink(pub Vec<u8>);

impl Sink for VecSink {
    type Error = std::convert::Infallible;
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}
