//! A snapshot's address space: regions of bytes at their addresses — a
//! core's loaded segments, a debugger's RAM images, a firmware ELF's loaded
//! sections — read only where a region holds every byte asked for.

use object::{Endian, Endianness};

/// One region: `bytes` at `address`.
#[derive(Clone, Copy, Debug)]
struct Region<'a> {
    address: u64,
    bytes: &'a [u8],
}

impl Region<'_> {
    fn end(&self) -> u64 {
        self.address.saturating_add(self.bytes.len() as u64)
    }
}

/// Disjoint regions, sorted by address.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memory<'a> {
    regions: Vec<Region<'a>>,
}

impl<'a> Memory<'a> {
    /// Adds `bytes` at `address` where no region added before covers them (the first source of
    /// an address wins: a RAM image over the initial values its ELF file holds).
    pub(crate) fn add(&mut self, address: u64, bytes: &'a [u8]) {
        let end = address.saturating_add(bytes.len() as u64);
        let mut gaps = vec![(address, end)];
        for r in &self.regions {
            gaps = gaps
                .into_iter()
                .flat_map(|(a, b)| {
                    if r.end() <= a || b <= r.address {
                        vec![(a, b)]
                    } else {
                        [(a, r.address.min(b)), (r.end().max(a), b)].into_iter().filter(|(x, y)| x < y).collect()
                    }
                })
                .collect();
        }
        for (a, b) in gaps {
            let from = (a - address) as usize;
            self.regions.push(Region { address: a, bytes: &bytes[from..from + (b - a) as usize] });
        }
        self.regions.sort_by_key(|r| r.address);
    }

    /// The region holding `address`.
    fn region(&self, address: u64) -> Option<&Region<'a>> {
        let i = self.regions.partition_point(|r| r.address <= address).checked_sub(1)?;
        Some(&self.regions[i]).filter(|r| address < r.end())
    }

    /// `len` bytes at `address`, if one region holds all of them.
    pub(crate) fn read(&self, address: u64, len: u64) -> Option<&'a [u8]> {
        let r = self.region(address)?;
        let from = usize::try_from(address.checked_sub(r.address)?).ok()?;
        r.bytes.get(from..from.checked_add(usize::try_from(len).ok()?)?)
    }

    /// At most `max` bytes from `address`: as many as its region holds from there.
    pub(crate) fn read_up_to(&self, address: u64, max: u64) -> Option<&'a [u8]> {
        let r = self.region(address)?;
        self.read(address, (r.end() - address).min(max))
    }

    /// The `width`-byte (4 or 8) word at `address`, in `endian`.
    pub(crate) fn word(&self, address: u64, width: u64, endian: Endianness) -> Option<u64> {
        self.read(address, width).map(|b| word_in(endian, b))
    }

    /// Each region with its address, for a scan.
    pub(crate) fn regions(&self) -> impl Iterator<Item = (u64, &'a [u8])> + '_ {
        self.regions.iter().map(|r| (r.address, r.bytes))
    }

    /// The lowest and highest address held, if any.
    pub(crate) fn span(&self) -> Option<(u64, u64)> {
        Some((self.regions.first()?.address, self.regions.iter().map(Region::end).max()?))
    }
}

/// `b` (4 or 8 bytes long; longer: its first 8) as a word in `endian`.
pub(crate) fn word_in(endian: Endianness, b: &[u8]) -> u64 {
    match b.len() {
        4 => u64::from(endian.read_u32([b[0], b[1], b[2], b[3]])),
        _ => endian.read_u64([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_read_from_the_first_source_that_holds_it() {
        let (ram, flash) = ([1u8; 16], [2u8; 32]);
        let mut m = Memory::default();
        m.add(0x1008, &ram);
        m.add(0x1000, &flash); // covers the RAM image and more on both sides
        assert_eq!(m.read(0x1000, 8), Some(&[2u8; 8][..]));
        assert_eq!(m.read(0x1008, 16), Some(&[1u8; 16][..]));
        assert_eq!(m.read(0x1018, 8), Some(&[2u8; 8][..]));
        assert_eq!(m.read(0x1004, 8), None, "no one region holds it all");
        assert_eq!(m.read(0x1020, 1), None);
        assert_eq!(m.read_up_to(0x1010, 100).map(<[u8]>::len), Some(8));
        assert_eq!(m.word(0x1008, 4, Endianness::Little), Some(0x0101_0101));
        assert_eq!(m.span(), Some((0x1000, 0x1020)));
        assert_eq!(m.read(u64::MAX - 2, 8), None);
    }
}
