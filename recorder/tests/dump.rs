//! A dump written by the recorder reads back, through the format crate, with
//! every thread (exited ones too), the module table, the clock anchors and
//! the site section.

use std::sync::atomic::{AtomicUsize, Ordering};

use ringtrace_format::layout::{MODULE_FLAG_MAIN, RING_FLAG_KEY_DEPTH, RING_FLAG_THREAD_EXITED, split_key};
use ringtrace_format::{ClockMode, Dump, SectionData, decode_site};

/// Counts heap allocations, to show spans after a thread's first allocate nothing.
struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn leaf() {
    let _span = ringtrace::span!();
}

#[test]
fn dump_holds_every_thread_modules_clock_and_sites() {
    let worker = std::thread::Builder::new()
        .name("worker".into())
        .spawn(|| {
            drop(ringtrace::span!("first")); // creates the ring: allocations allowed here
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            for _ in 0..1000 {
                let _outer = ringtrace::span!("outer");
                leaf();
            }
            ALLOCATIONS.load(Ordering::Relaxed) - before
        })
        .unwrap();
    let allocations = worker.join().unwrap();
    assert_eq!(allocations, 0, "spans after a thread's first must not allocate");
    drop(ringtrace::span!("on main"));

    let _open_outer = ringtrace::span!("open at dump");
    let _open_inner = ringtrace::span!();
    let mut bytes = Vec::new();
    let stats = ringtrace::dump_to_writer(&mut bytes).unwrap();
    assert_eq!(stats.bytes, bytes.len() as u64);
    assert_eq!(stats.lost, 0);

    let dump = Dump::parse(&bytes).unwrap();
    let mut rings = Vec::new();
    let mut sites = None;
    let mut modules = Vec::new();
    let mut anchors = Vec::new();
    let mut calibration = Vec::new();
    let mut dladdr = Vec::new();
    for s in dump.sections() {
        match s.unwrap().decode().unwrap() {
            SectionData::Ring(info, records, open) => {
                rings.push((info, records.iter().collect::<Vec<_>>(), open.iter().collect::<Vec<_>>()))
            }
            SectionData::Sites { base, bytes } => sites = Some((base, bytes)),
            SectionData::Modules(m) => modules = m.iter().collect(),
            SectionData::Clock(_, a) => anchors = a.iter().collect(),
            SectionData::Calibration(c) => calibration = c.iter().collect(),
            SectionData::Dladdr(d) => dladdr = d.iter().map(|e| (e.key, e.module.to_vec())).collect(),
            _ => {}
        }
    }

    // The exited worker's ring is there, marked exited, with all 2001 spans.
    let (info, records, _) = rings.iter().find(|(i, _, _)| i.name == b"worker").expect("worker ring");
    assert_ne!(info.flags & RING_FLAG_THREAD_EXITED, 0);
    assert_eq!((info.written, records.len()), (2001, 2001));
    assert!(records.iter().all(|r| r.exit >= r.enter));
    // Each key carries its span's depth: `first` and every `outer` at 0, every `leaf` at 1.
    assert_ne!(info.flags & RING_FLAG_KEY_DEPTH, 0);
    let depths: Vec<Option<u8>> = records.iter().map(|r| split_key(r.key).1).collect();
    assert_eq!(depths[0], Some(0));
    assert!(depths[1..].chunks(2).all(|pair| pair == [Some(1), Some(0)]), "{:?}", &depths[..8]);
    let records: Vec<_> = records.iter().map(|r| ringtrace_format::Record { key: split_key(r.key).0, ..*r }).collect();

    // The dumping thread's two open spans are in its ring section, outermost first.
    let this_thread = std::thread::current().name().unwrap_or_default().as_bytes().to_vec();
    let (_, _, open) = rings.iter().find(|(i, _, _)| i.name == this_thread).expect("this thread's ring");
    assert_eq!(open.len(), 2, "{open:?}");
    assert!(open[0].1 <= open[1].1, "outer entered first");
    // Named spans resolve from the copied site section alone.
    let (base, section) = sites.expect("site section");
    let label = |key: u64| decode_site(section, (key - base) as usize, dump.endian).map(|s| s.label.to_vec());
    assert_eq!(label(records[0].key), Some(b"first".to_vec()));
    assert_eq!(label(records[2].key), Some(b"outer".to_vec())); // leaf ends before outer
    assert_eq!(label(open[0].0), Some(b"open at dump".to_vec()));
    assert_eq!(label(open[1].0), None, "span!() is a code address");
    assert_eq!(label(records[1].key), None, "span!() keys are code addresses, not sites");

    // The code address of `leaf`'s span lies in the main executable, which has a build-id.
    let exe = std::env::current_exe().unwrap();
    let main = modules.iter().find(|m| m.flags & MODULE_FLAG_MAIN != 0).expect("main module");
    assert_eq!(main.path, exe.as_os_str().as_encoded_bytes());
    assert!(main.contains(records[1].key));
    assert!(!main.build_id.is_empty());

    // The recorder measured itself for each clock mode: a counter read
    // costs something, and an empty span adds less than a microsecond.
    let modes: Vec<_> = calibration.iter().map(|c| c.mode).collect();
    assert_eq!(modes, [ClockMode::Fast, ClockMode::Ordered, ClockMode::Serialized]);
    for c in &calibration {
        assert!(c.read_cost > 0 && c.span_cost < 10_000, "{c:?}");
        assert!((64..=1024).contains(&c.samples), "{c:?}");
    }

    // dladdr knew the code-address key: it lies in this test binary.
    let leaf_key = records[1].key;
    let module = dladdr.iter().find(|(k, _)| *k == leaf_key).map(|(_, m)| m.clone()).expect("dladdr entry");
    assert!(module.ends_with(exe.file_name().unwrap().as_encoded_bytes()), "{}", String::from_utf8_lossy(&module));

    // Start and dump anchors, in order.
    assert_eq!(anchors.len(), 2);
    assert!(anchors[0].ticks < anchors[1].ticks && anchors[0].mono_ns < anchors[1].mono_ns);
}
