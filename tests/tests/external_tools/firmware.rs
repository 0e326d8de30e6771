//! Firmware on emulated boards: `samples/firmware` built for its core, run
//! on QEMU with `-icount` (virtual time follows the instruction count, so
//! every run gives the same times), its dump written to the host through
//! semihosting, converted with names from the firmware's own DWARF.

use std::collections::{BTreeMap, HashMap};
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

/// `dump` as a firmware would stream it in the wire encoding (`ringtrace_format::wire`): an info
/// frame (its clock, anchor, tracks and code), then each track's records in ring order, in frames
/// of at most 1 KiB (what a firmware's streaming buffer holds). Returns the stream and its bytes
/// a span (COBS framing, CRCs and the info frame included), printed.
fn wire_stream(dump: &Path) -> (Vec<u8>, f64) {
    use ringtrace_format::wire::{Info, SpanEncoder};
    use ringtrace_format::{Anchor, Dump, SectionData};
    let bytes = std::fs::read(dump).unwrap();
    let dump = Dump::parse(&bytes).unwrap();
    let sections: Vec<SectionData<'_>> = dump.sections().map(|s| s.unwrap().decode().unwrap()).collect();
    let mut out = ringtrace_format::IoSink(Vec::new());
    let (mut clock, mut anchor, mut name, mut code, mut sites) = (None, Anchor::default(), &b""[..], None, None);
    let mut tracks = Vec::new();
    for section in &sections {
        match section {
            SectionData::Meta(meta) => name = meta.process_name,
            SectionData::Clock(c, anchors) => {
                clock = Some(*c);
                anchor = anchors.iter().next().unwrap_or_default();
            }
            SectionData::Modules(modules) => code = modules.iter().next().map(|m| (m.start, m.end, m.path)),
            SectionData::Ring(info, _, _) => tracks.push((info.tid, info.flags, info.name)),
            SectionData::Sites { base, bytes } => sites = Some((*base, *bytes)),
            _ => {}
        }
    }
    let clock = clock.unwrap();
    let info = Info { process_name: name, clock, anchor, tracks: &tracks, code };
    info.write(&mut [0u8; 1024], &mut out).unwrap();
    if let Some((base, bytes)) = sites {
        ringtrace_format::wire::write_sites(base, bytes, &mut [0u8; 1024], &mut out).unwrap();
    }
    let mut spans = 0usize;
    for section in &sections {
        if let SectionData::Ring(info, records, _) = section {
            let mut enc = SpanEncoder::<1024>::new(info.tid, clock.counter_bits);
            enc.begin(0);
            for r in records.iter() {
                enc.send(&r, &mut out).unwrap();
                spans += 1;
            }
            enc.finish(&mut out).unwrap();
        }
    }
    let per_span = out.0.len() as f64 / spans as f64;
    let program = String::from_utf8_lossy(name);
    eprintln!("{program}: {spans} spans, {} bytes on the wire: {per_span:.2} bytes a span", out.0.len());
    (out.0, per_span)
}

/// Each thread's spans of a Chrome trace, by thread name: (name, start less the trace's first,
/// duration), in start order.
fn spans_by_thread(trace: &ringtrace_tests::ChromeTrace) -> BTreeMap<String, Vec<(String, i64, i64)>> {
    let first = trace.events.iter().map(|e| e.ts_ns).min().unwrap_or(0);
    let mut out: BTreeMap<String, Vec<(String, i64, i64)>> = BTreeMap::new();
    for e in &trace.events {
        let thread = trace.thread_names.get(&e.tid).cloned().unwrap_or_default();
        out.entry(thread).or_default().push((e.name.clone(), e.ts_ns - first, e.dur_ns));
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

/// Streamed, a firmware's spans read back as its dump's: every span, named from the ELF, at the
/// same times; a damaged frame is skipped, its spans counted as lost on the link, exit 3.
fn check_stream(dump: &Path, elf: &Path, dir: &Path) {
    let (stream, per_span) = wire_stream(dump);
    assert!(per_span <= 6.0, "{per_span:.2} bytes a span on the wire");
    let path = dir.join("stream.rtw");
    std::fs::write(&path, &stream).unwrap();
    let (from_dump, from_stream) = (chrome(dump, elf), chrome(&path, elf));
    assert_eq!(spans_by_thread(&from_stream), spans_by_thread(&from_dump));
    assert_eq!(from_stream.thread_names.len(), from_dump.thread_names.len());
    // Packed, as a core is: STREAM.rtw.rtd beside it, named without the ELF; batched from a folder.
    let out = ringtrace_tests::rtconv().arg("pack").arg(&path).arg("--exe").arg(elf).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let packed = dir.join("stream.rtw.rtd");
    let args = [
        "convert".as_ref(),
        packed.as_os_str(),
        "--symbolizer".as_ref(),
        "packed,sites".as_ref(),
        "-o".as_ref(),
        "-".as_ref(),
    ];
    let (a, b) = (spans_by_thread(&parse_chrome(&rtconv_ok(&args))), spans_by_thread(&from_dump));
    for (thread, spans) in &b {
        let got = &a[thread];
        let first = spans.iter().zip(got).find(|(x, y)| x != y);
        assert!(
            first.is_none() && got.len() == spans.len(),
            "{thread}: {first:?}, {} against {}",
            got.len(),
            spans.len()
        );
    }
    std::fs::remove_file(&packed).unwrap();
    let batch = dir.join("batch");
    let args = ["batch".as_ref(), dir.as_os_str(), "--exe".as_ref(), elf.as_os_str(), "-o".as_ref(), batch.as_os_str()];
    rtconv_ok(&args);
    let batched = parse_chrome(&std::fs::read_to_string(batch.join("stream.json")).unwrap());
    assert_eq!(spans_by_thread(&batched), spans_by_thread(&from_dump));

    // A byte of the first spans frame changed on the link: the main track's next frame says how
    // many spans it held (a track's last frame lost would leave no frame to say so).
    let mut damaged = stream.clone();
    let mut scratch = vec![0u8; ringtrace_format::wire::FRAME_MAX + 8];
    let (start, frame) = ringtrace_format::wire::frames(&stream)
        .find(|(_, f)| {
            let decoded = ringtrace_format::wire::Frame::decode(f.as_ref().unwrap(), &mut scratch);
            matches!(decoded, Ok(ringtrace_format::wire::Frame::Spans(_)))
        })
        .unwrap();
    damaged[start + frame.unwrap().len() / 2] ^= 0x5a;
    std::fs::write(&path, &damaged).unwrap();
    let out =
        ringtrace_tests::rtconv().arg("convert").arg(&path).arg("--exe").arg(elf).args(["-o", "-"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("damaged frame(s) skipped"), "{stderr}");
    let lost: usize = stderr
        .lines()
        .filter_map(|l| {
            let said = " span(s) lost on the link (frames missing or damaged, or sent before the capture began)";
            l.split(": ").find_map(|part| part.strip_suffix(said))
        })
        .map(|n| n.parse::<usize>().unwrap())
        .sum();
    let kept = parse_chrome(&String::from_utf8_lossy(&out.stdout)).events.len();
    assert!(lost > 0, "{stderr}");
    assert_eq!(kept + lost, from_dump.events.len(), "every span kept or counted lost: {stderr}");
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
    check_stream(&dir.join(dump), &elf, &dir);
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
