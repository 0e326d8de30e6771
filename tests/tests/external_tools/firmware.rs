//! Firmware on emulated boards: `samples/firmware` built for its core, run
//! on QEMU with `-icount` (virtual time follows the instruction count, so
//! every run gives the same times), its dump written to the host through
//! semihosting, converted with names from the firmware's own DWARF.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ringtrace_tests::{Scratch, build_firmware, parse_chrome, rtconv_ok, scratch, tool};

/// Runs `elf` on QEMU (`qemu` with `machine` arguments) in `dir`, where its
/// semihosting file lands; returns what it printed. It must exit 0 within
/// five minutes (a hang is killed).
fn run_on_qemu(qemu: &str, machine: &[&str], elf: &Path, dir: &Path) -> String {
    let out = tool("timeout")
        .args(["-s", "KILL", "300", qemu])
        .args(machine)
        .args(["-nographic", "-monitor", "none", "-serial", "none"])
        .args(["-semihosting-config", "enable=on,target=native", "-icount", "shift=5", "-kernel"])
        .arg(elf)
        .current_dir(dir)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{qemu} failed: {printed}{}", String::from_utf8_lossy(&out.stderr));
    printed
}

/// rtconv with `args`; its stdout, which must come with exit 0.
/// What the firmware samples record (their doc comments): per name, calls.
fn expected(rounds: u64, irq_runs: u64, prefix: &str) -> HashMap<String, u64> {
    HashMap::from([
        (format!("{prefix}::fib"), rounds * 177),
        (format!("{prefix}::middle"), rounds),
        (format!("{prefix}::leaf"), rounds * 3),
        ("loop".to_string(), rounds - 1),
        (format!("{prefix}::irq_work"), irq_runs),
    ])
}

/// `dump` converted to Chrome JSON with names from `elf`, read back.
fn chrome(dump: &Path, elf: &Path) -> ringtrace_tests::ChromeTrace {
    let args = ["convert".as_ref(), dump.as_os_str(), "--exe".as_ref(), elf.as_os_str(), "-o".as_ref(), "-".as_ref()];
    parse_chrome(&rtconv_ok(&args))
}

/// The thread id of the thread named `name`.
fn tid_of(trace: &ringtrace_tests::ChromeTrace, name: &str) -> u64 {
    *trace.thread_names.iter().find(|(_, n)| *n == name).unwrap_or_else(|| panic!("no thread {name}")).0
}

/// Checks a firmware's dump against what it is known to have done.
fn check_dump(dump: &Path, elf: &Path, printed: &str, prefix: &str, irq_track: &str) {
    // `rounds R irq N`: the sample's loop count, and its own count of interrupt handler runs.
    let numbers: Vec<u64> = printed
        .lines()
        .find_map(|l| l.strip_prefix("rounds "))
        .unwrap_or_else(|| panic!("no `rounds R irq N` line in {printed:?}"))
        .split(" irq ")
        .map(|n| n.trim().parse().unwrap())
        .collect();
    let (rounds, irq_runs) = (numbers[0], numbers[1]);
    assert!(irq_runs >= 3, "the timer interrupt ran {irq_runs} times");
    // Nothing lost; every key named from DWARF.
    let info = rtconv_ok(&["info".as_ref(), dump.as_os_str(), "--exe".as_ref(), elf.as_os_str()]);
    assert!(info.contains("0 overwritten, 0 dropped"), "{info}");
    assert!(info.contains("unknown 0"), "every key named: {info}");
    // No real-time clock: said so. 32-bit targets keep 12-byte records (their ring words are 32 bits).
    assert!(info.contains("no wall-clock time in the dump"), "{info}");
    let is_64 = object::File::parse(&*std::fs::read(elf).unwrap()).map(|f| object::Object::is_64(&f)).unwrap();
    assert_eq!(info.contains("compact records: 12 bytes"), !is_64, "{info}");
    let trace = chrome(dump, elf);
    let (main, irq) = (tid_of(&trace, "main"), tid_of(&trace, irq_track));
    let mut counts: HashMap<String, u64> = HashMap::new();
    for e in &trace.events {
        *counts.entry(e.name.clone()).or_default() += 1;
    }
    assert_eq!(counts, expected(rounds, irq_runs, prefix));
    // The interrupt's spans are on its own track, and only there.
    let irq_name = format!("{prefix}::irq_work");
    assert!(trace.events.iter().all(|e| (e.tid == irq) == (e.name == irq_name)));
    // fib(10) nests 10 deep; each leaf lies inside a middle.
    let fib_name = format!("{prefix}::fib");
    let fibs: Vec<_> = trace.events.iter().filter(|e| e.name == fib_name).collect();
    let depth =
        |e: &&ringtrace_tests::Event| fibs.iter().filter(|o| o.ts_ns <= e.ts_ns && e.end_ns() <= o.end_ns()).count();
    assert_eq!(fibs.iter().map(depth).max(), Some(10));
    let middles: Vec<_> = trace.events.iter().filter(|e| e.name == format!("{prefix}::middle")).collect();
    for leaf in trace.events.iter().filter(|e| e.name == format!("{prefix}::leaf")) {
        assert!(
            middles.iter().any(|m| m.ts_ns <= leaf.ts_ns && leaf.end_ns() <= m.end_ns()),
            "{leaf:?} outside every middle"
        );
    }
    // The interrupts happened while the main loop ran: inside the main track's time range.
    let on = |tid: u64| trace.events.iter().filter(move |e| e.tid == tid);
    let (start, end) = (on(main).map(|e| e.ts_ns).min().unwrap(), on(main).map(|e| e.end_ns()).max().unwrap());
    assert!(on(irq).all(|e| start <= e.ts_ns && e.end_ns() <= end), "interrupt spans outside [{start}, {end}]");
}

/// The bytes a span of `dump` takes in the wire encoding (`ringtrace_format::wire`), each
/// track's records, in ring order, sent in frames of at most 1 KiB (what a firmware's
/// streaming buffer holds), COBS framing and CRCs included; printed, and returned.
fn wire_bytes_per_span(dump: &Path) -> f64 {
    use ringtrace_format::wire::SpanEncoder;
    use ringtrace_format::{Dump, SectionData};
    let bytes = std::fs::read(dump).unwrap();
    let dump = Dump::parse(&bytes).unwrap();
    let mut bits = 64;
    let (mut out, mut spans) = (ringtrace_format::IoSink(Vec::new()), 0usize);
    for section in dump.sections() {
        match section.unwrap().decode().unwrap() {
            SectionData::Clock(clock, _) => bits = clock.counter_bits,
            SectionData::Ring(info, records, _) => {
                let mut enc = SpanEncoder::<1024>::new(info.tid, bits);
                enc.begin(0);
                for r in records.iter() {
                    if !enc.push(&r) {
                        enc.finish(&mut out).unwrap();
                        enc.begin(0);
                        assert!(enc.push(&r));
                    }
                    spans += 1;
                }
                enc.finish(&mut out).unwrap();
            }
            _ => {}
        }
    }
    let per_span = out.0.len() as f64 / spans as f64;
    eprintln!("{}: {spans} spans, {} bytes on the wire: {per_span:.2} bytes a span", dump_name(&bytes), out.0.len());
    per_span
}

/// The process name of a dump, for messages.
fn dump_name(bytes: &[u8]) -> String {
    use ringtrace_format::{Dump, SectionData};
    let dump = Dump::parse(bytes).unwrap();
    dump.sections()
        .find_map(|s| match s.ok()?.decode().ok()? {
            SectionData::Meta(meta) => Some(String::from_utf8_lossy(meta.process_name).into_owned()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The main track's spans of a dump in start order — (name, duration) —
/// and whether each holds the time of an interrupt span; and how many
/// interrupt spans there are.
fn main_spans(dump: &Path, elf: &Path, irq_track: &str) -> (Vec<(String, i64, bool)>, usize) {
    let trace = chrome(dump, elf);
    let (main, irq) = (tid_of(&trace, "main"), tid_of(&trace, irq_track));
    let irqs: Vec<_> = trace.events.iter().filter(|e| e.tid == irq).collect();
    let mut spans: Vec<_> = trace.events.iter().filter(|e| e.tid == main).collect();
    spans.sort_by_key(|e| (e.ts_ns, std::cmp::Reverse(e.dur_ns)));
    let spans = spans
        .iter()
        .map(|e| (e.name.clone(), e.dur_ns, irqs.iter().any(|i| e.ts_ns <= i.ts_ns && i.end_ns() <= e.end_ns())))
        .collect();
    (spans, irqs.len())
}

/// A firmware sample as one test builds and runs it.
struct Firmware<'a> {
    package: &'a str,
    target: &'a str,
    features: Option<&'a str>,
    /// The QEMU program and its machine arguments.
    qemu: &'a str,
    machine: &'a [&'a str],
    /// The dump file it writes, and the name of its interrupt's track.
    dump: &'a str,
    irq_track: &'a str,
    /// Its clock's tick in ns where a tick is longer than an instruction (0: durations repeat
    /// exactly; otherwise a tick's phase at start may differ between runs, and a duration by a tick).
    tick_ns: i64,
}

const CORTEX_M3: Firmware<'static> = Firmware {
    package: "fw-cortex-m",
    target: "thumbv7m-none-eabi",
    features: None,
    qemu: "qemu-system-arm",
    machine: &["-M", "mps2-an385", "-cpu", "cortex-m3"],
    dump: "cortex-m.rtd",
    irq_track: "SysTick",
    tick_ns: 0,
};

const RISCV32: Firmware<'static> = Firmware {
    package: "fw-riscv",
    target: "riscv32imac-unknown-none-elf",
    features: None,
    qemu: "qemu-system-riscv32",
    machine: &["-M", "virt", "-bios", "none"],
    dump: "riscv.rtd",
    irq_track: "timer",
    tick_ns: 0,
};

/// Builds, runs twice and checks one firmware; returns the ELF and the folder of the first run's dump.
fn run_firmware(fw: &Firmware<'_>) -> (PathBuf, Scratch) {
    let Firmware { package, target, features, qemu, machine, dump, irq_track, tick_ns } = *fw;
    let elf = build_firmware(package, target, features);
    let dir = scratch(&format!("{package}-{target}-{}", features.unwrap_or("default")));
    let printed = run_on_qemu(qemu, machine, &elf, &dir);
    check_dump(&dir.join(dump), &elf, &printed, &package.replace('-', "_"), irq_track);
    // Streamed, the same spans would take at most 6 bytes each on the wire.
    let per_span = wire_bytes_per_span(&dir.join(dump));
    assert!(per_span <= 6.0, "{per_span:.2} bytes a span on the wire");
    // With -icount, time follows the instruction count: a second run has the same spans with the
    // same durations — but for those an interrupt landed in, whose instruction can differ by a few
    // (RISC-V's mtime ticks every 100 ns of QEMU's virtual clock, whose phase at start is the host's).
    let (first, irqs) = main_spans(&dir.join(dump), &elf, irq_track);
    let again = scratch(&format!("{package}-{target}-{}-again", features.unwrap_or("default")));
    run_on_qemu(qemu, machine, &elf, &again);
    let (second, irqs_again) = main_spans(&again.join(dump), &elf, irq_track);
    assert_eq!(first.len(), second.len());
    let mut interrupted = 0;
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.0, b.0, "the same span in the same place");
        if a.2 || b.2 {
            interrupted += 1;
        } else {
            assert!(
                (a.1 - b.1).abs() <= tick_ns,
                "{}: {} and {} ns, not the same duration in both runs",
                a.0,
                a.1,
                b.1
            );
        }
    }
    // An interrupt lies inside at most the loop's pulse and fib's 10 levels (or middle and leaf).
    let most = 11 * (irqs + irqs_again);
    assert!(interrupted <= most, "{interrupted} of {} spans held an interrupt; at most {most} can", first.len());
    (elf, dir)
}

#[test]
fn a_cortex_m3_firmware_on_qemu_records_dwarf_named_spans_and_an_interrupt_track() {
    run_firmware(&CORTEX_M3);
}

#[test]
fn a_riscv32_firmware_on_qemu_records_dwarf_named_spans_and_an_interrupt_track() {
    run_firmware(&RISCV32);
}

#[test]
fn a_cortex_m0_firmware_of_thumb_1_code_on_qemu_records_dwarf_named_spans_and_an_interrupt_track() {
    run_firmware(&Firmware { target: "thumbv6m-none-eabi", machine: &["-M", "microbit"], ..CORTEX_M3 });
}

#[test]
fn a_riscv64_firmware_on_qemu_records_dwarf_named_spans_and_an_interrupt_track() {
    run_firmware(&Firmware { target: "riscv64gc-unknown-none-elf", qemu: "qemu-system-riscv64", ..RISCV32 });
}

#[test]
fn a_riscv32_firmware_timed_by_the_clint_mtime_records_the_same_spans() {
    let (elf, dir) = run_firmware(&Firmware { features: Some("mtime"), tick_ns: 100, ..RISCV32 }); // 10 MHz
    let info = rtconv_ok(&["info".as_ref(), dir.join("riscv.rtd").as_os_str(), "--exe".as_ref(), elf.as_os_str()]);
    assert!(info.contains("RISC-V mtime, 32 bits; rate 10.000 MHz nominal"), "{info}");
}
