//! The format crate's validating reader on arbitrary bytes: every section
//! decoded, every record, anchor, module and entry iterated. It may refuse
//! the input; it must never panic, hang or read out of bounds. Each input
//! is tried as it is and with its checksums made right (see the lib).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringtrace_format::{Dump, SectionData};

fuzz_target!(|data: &[u8]| {
    read(data);
    read(&ringtrace_fuzz::with_checksums_fixed(data));
});

fn read(data: &[u8]) {
    let Ok(dump) = Dump::parse(data) else { return };
    for section in dump.sections() {
        let Ok(section) = section else { break };
        let Ok(decoded) = section.decode() else { continue };
        match decoded {
            SectionData::Ring(_, records, open) | SectionData::RingChunk(_, _, records, open) => {
                std::hint::black_box(records.iter().map(|r| r.key ^ r.enter ^ r.exit).fold(0, u64::wrapping_add));
                std::hint::black_box(records.iter().rev().count());
                std::hint::black_box(open.iter().count());
            }
            SectionData::Modules(m) => drop(std::hint::black_box(m.iter().count())),
            SectionData::Dladdr(d) => drop(std::hint::black_box(d.iter().count())),
            SectionData::Clock(_, a) => drop(std::hint::black_box(a.iter().count())),
            SectionData::Calibration(c) => drop(std::hint::black_box(c.iter().count())),
            SectionData::Unbalanced(u) => drop(std::hint::black_box(u.iter().count())),
            SectionData::Sites { base, bytes } => {
                let mut at = 0;
                while at < bytes.len() {
                    match ringtrace_format::decode_site(bytes, at, dump.endian) {
                        Some(site) => at += (16 + site.label.len() + site.file.len()).next_multiple_of(8),
                        None => break,
                    }
                }
                std::hint::black_box(base);
            }
            _ => {}
        }
    }
}
