//! CRC-32 (IEEE 802.3, as zlib computes it), the checksum of every section.
//!
//! By default crc32fast's: fast, with 16 KiB of tables. With the `small-crc`
//! feature, a table of 256 words (1 KiB, built at compile time) and a byte at
//! a time — for firmware, whose flash the big tables would fill and whose
//! dumps are small. Both give the same checksums (a test checks them against
//! each other).

#[cfg(not(feature = "small-crc"))]
pub(crate) use crc32fast::{Hasher, hash};
#[cfg(feature = "small-crc")]
pub(crate) use small::{Hasher, hash};

#[cfg_attr(not(feature = "small-crc"), allow(dead_code))]
mod small {
    /// The reflected polynomial.
    const POLY: u32 = 0xEDB8_8320;

    /// The remainder of each byte, one bit at a time.
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut bit = 0;
            while bit < 8 {
                c = if c & 1 != 0 { POLY ^ (c >> 1) } else { c >> 1 };
                bit += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };

    /// A running CRC-32, as crc32fast's `Hasher`.
    #[derive(Clone, Debug)]
    pub(crate) struct Hasher(u32);

    impl Hasher {
        pub(crate) fn new() -> Self {
            Hasher(!0)
        }

        pub(crate) fn update(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = TABLE[((self.0 ^ u32::from(b)) & 0xFF) as usize] ^ (self.0 >> 8);
            }
        }

        pub(crate) fn finalize(self) -> u32 {
            !self.0
        }
    }

    /// The CRC-32 of `bytes`.
    pub(crate) fn hash(bytes: &[u8]) -> u32 {
        let mut h = Hasher::new();
        h.update(bytes);
        h.finalize()
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn matches_crc32fast() {
            assert_eq!(super::hash(b"123456789"), 0xCBF4_3926, "the standard check value");
            let data: [u8; 1000] = core::array::from_fn(|i| (i * 7 + i / 13) as u8);
            for len in [0, 1, 3, 64, 999, 1000] {
                let mut h = super::Hasher::new();
                let (a, b) = data[..len].split_at(len / 3);
                h.update(a);
                h.update(b);
                assert_eq!(h.finalize(), crc32fast::hash(&data[..len]), "{len} bytes");
            }
        }
    }
}
