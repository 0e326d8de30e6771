//! After a crash on a microcontroller: the firmware samples, run on QEMU
//! with `-icount shift=5,sleep=off` (virtual time by instructions alone, so
//! two runs' interrupts land at the same instruction even on a loaded host)
//! under `gdb-multiarch` (QEMU's gdb stub on a pipe), are
//! made to fault deep in `fib` (a debugger sets `FAULT_AT`), and stopped in
//! the fault handler. There gdb prints the call path (`bt`), saves the RAM
//! (`dump binary memory`, as one does with a debug probe), and has QEMU write
//! a whole-machine ELF core (`monitor dump-guest-memory`) and itself one
//! (`gcore`). The truths: the spans open in the RAM image are gdb's `fib`
//! frames, outermost first; its completed spans are those of the firmware's
//! own `Dumper` dump from a second run that faults at the same instruction
//! (`DUMP_AT_FAULT`); and both cores read as the RAM image does.
//!
//! There is no debug probe here: gdb through QEMU's stub plays its part
//! (halting the target and reading its memory), as a probe does through
//! OpenOCD or probe-rs.

use std::collections::BTreeMap;
use std::path::Path;

use ringtrace_tests::{ChromeTrace, build_firmware, parse_chrome, rtconv, rtconv_ok, scratch, tool};

/// A firmware sample, its board, and where its RAM is.
struct Board<'a> {
    package: &'a str,
    target: &'a str,
    qemu: &'a str,
    machine: &'a [&'a str],
    /// The RAM region to save: its address and length (the boards' memory.x).
    ram: (u64, u64),
    /// The firmware's own dump at the fault, and the interrupt's track name.
    dump: &'a str,
    irq_track: &'a str,
    /// The `fib` call that faults.
    fault_at: u32,
    /// Whether QEMU's `dump-guest-memory` can write this board's core (QEMU 10.0 keeps the
    /// micro:bit's RAM out of the system address space: "no guest memory to dump").
    qemu_core: bool,
}

const CORTEX_M3: Board<'static> = Board {
    package: "fw-cortex-m",
    target: "thumbv7m-none-eabi",
    qemu: "qemu-system-arm",
    machine: &["-M", "mps2-an385", "-cpu", "cortex-m3"],
    ram: (0x2000_0000, 4 << 20),
    dump: "cortex-m-fault.rtd",
    irq_track: "SysTick",
    fault_at: 10 * 177 + 100, // in round 10 of 20
    qemu_core: true,
};

const RISCV32: Board<'static> = Board {
    package: "fw-riscv",
    target: "riscv32imac-unknown-none-elf",
    qemu: "qemu-system-riscv32",
    machine: &["-M", "virt", "-bios", "none"],
    ram: (0x8020_0000, 2 << 20),
    dump: "riscv-fault.rtd",
    irq_track: "timer",
    fault_at: 10 * 177 + 100,
    qemu_core: true,
};

/// The gdb session: QEMU started on gdb's pipe, halted; the firmware run to `main` (its RAM
/// initialised), told where to fault, then `then`.
fn gdb_session(board: &Board<'_>, elf: &Path, dir: &Path, then: &[String]) -> String {
    let qemu = format!(
        "{} {} -display none -monitor none -serial none -chardev file,id=semihosting,path={} \
         -semihosting-config enable=on,target=native,chardev=semihosting -icount shift=5,sleep=off -kernel {} -gdb stdio -S",
        board.qemu,
        board.machine.join(" "),
        dir.join("console.txt").display(),
        elf.display()
    );
    let mut commands = vec![
        "set pagination off".to_string(),
        "set confirm off".into(),
        format!("target remote | exec timeout -s KILL 300 {qemu}"),
        "break main".into(),
        "continue".into(),
        "set language c".into(),
        format!("set var *(unsigned int *)&FAULT_AT = {}", board.fault_at),
    ];
    commands.extend(then.iter().cloned());
    let mut gdb = tool("gdb-multiarch");
    gdb.args(["-q", "-batch", "-nx"]).current_dir(dir);
    for c in &commands {
        gdb.args(["-ex", c]);
    }
    let out = gdb.arg(elf).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The functions of gdb's backtrace, innermost first.
fn backtrace(gdb_output: &str) -> Vec<String> {
    let frame = regex::Regex::new(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(").unwrap();
    gdb_output.lines().filter_map(|l| frame.captures(l).map(|c| c[1].to_string())).collect()
}

/// Per thread name, its spans: (name, start less the trace's first start, duration, open).
type Spans = BTreeMap<String, Vec<(String, i64, i64, bool)>>;

fn spans(trace: &ChromeTrace) -> Spans {
    let first = trace.events.iter().map(|e| e.ts_ns).min().unwrap_or(0);
    let mut out = Spans::new();
    for e in &trace.events {
        let thread = trace.thread_names.get(&e.tid).cloned().unwrap_or_default();
        out.entry(thread).or_default().push((e.name.clone(), e.ts_ns - first, e.dur_ns, e.open));
    }
    for list in out.values_mut() {
        list.sort_by_key(|s| (s.1, std::cmp::Reverse(s.2), s.0.clone()));
    }
    out
}

/// Asserts `a` and `b` are the same spans — names, starts and durations within the 1 ns that
/// rounding a tick of another length to nanoseconds may give from two anchors, and whether
/// open — (a span open at the snapshot ends where each input ends: its duration is not
/// compared); else says how many each has and where they part.
fn same(a: &[(String, i64, i64, bool)], b: &[(String, i64, i64, bool)], what: &str) {
    let alike = |x: &(String, i64, i64, bool), y: &(String, i64, i64, bool)| {
        let near = |p: i64, q: i64| (p - q).abs() <= 1;
        x.0 == y.0 && x.3 == y.3 && near(x.1, y.1) && (x.3 || near(x.2, y.2))
    };
    if let Some(i) = (0..a.len().min(b.len())).find(|&i| !alike(&a[i], &b[i])) {
        panic!("{what}: span {i} of {} and {} differs: {:?} against {:?}", a.len(), b.len(), &a[i], &b[i]);
    }
    assert_eq!(a.len(), b.len(), "{what}: as many spans");
}

/// `input` (arguments naming a dump, a core or memory images) as Chrome JSON, read back.
fn chrome(input: &[&std::ffi::OsStr], elf: &Path) -> ChromeTrace {
    let mut args: Vec<&std::ffi::OsStr> = vec!["convert".as_ref()];
    args.extend_from_slice(input);
    args.extend(["--elf".as_ref(), elf.as_os_str(), "-o".as_ref(), "-".as_ref()]);
    parse_chrome(&rtconv_ok(&args))
}

/// The open spans of each thread, outermost first, from `rtconv info --format json`.
fn open_spans(input: &[&std::ffi::OsStr], elf: &Path) -> BTreeMap<String, Vec<String>> {
    let mut args: Vec<&std::ffi::OsStr> = vec!["info".as_ref()];
    args.extend_from_slice(input);
    args.extend(["--elf".as_ref(), elf.as_os_str(), "--format".as_ref(), "json".as_ref()]);
    let info: serde_json::Value = serde_json::from_str(&rtconv_ok(&args)).unwrap();
    let threads = info[0]["threads"].as_array().unwrap();
    threads
        .iter()
        .map(|t| {
            let open = t["open"].as_array().unwrap().iter().map(|o| o.as_str().unwrap().to_string()).collect();
            (t["name"].as_str().unwrap().to_string(), open)
        })
        .collect()
}

fn run_to_the_fault(board: &Board<'_>) {
    let elf = build_firmware(board.package, board.target, None);
    let module = board.package.replace('-', "_");
    let fib = format!("{module}::fib");

    // Run 1: stopped where the fault lands — cortex-m-rt's HardFault handler, through whose
    // exception frame gdb unwinds; on RISC-V the trap vector, before it has run an instruction,
    // where the faulting pc is `mepc` and every other register is as the fault left it.
    let dir = scratch(&format!("fw-ram-{}", board.target));
    let (ram, core, gdb_core) = (dir.join("ram.bin"), dir.join("machine.core"), dir.join("gdb.core"));
    let stop: Vec<String> = if board.target.starts_with("thumb") {
        vec!["break HardFault".into(), "continue".into()]
    } else {
        vec!["break *_start_trap if $mcause == 2".into(), "continue".into(), "set var $pc = $mepc".into()]
    };
    let mut then = stop;
    then.extend([
        "bt".to_string(),
        format!("dump binary memory {} {:#x} {:#x}", ram.display(), board.ram.0, board.ram.0 + board.ram.1),
        format!("monitor dump-guest-memory {}", core.display()),
        format!("gcore {}", gdb_core.display()),
        "kill".into(),
    ]);
    let printed = gdb_session(board, &elf, &dir, &then);
    assert_eq!(!printed.contains("no guest memory to dump"), board.qemu_core, "{printed}");
    let frames = backtrace(&printed);
    assert!(frames.iter().any(|f| f.ends_with("::crash")), "no fault in gdb's backtrace:\n{printed}");
    let mut gdb_fibs: Vec<String> = frames.iter().filter(|f| **f == fib).cloned().collect();
    gdb_fibs.reverse();
    assert!(gdb_fibs.len() >= 5, "the fault is deep in fib's recursion: {frames:?}");

    // The open spans in the RAM image: gdb's instrumented frames, outermost first.
    let image = format!("{}@{:#x}", ram.display(), board.ram.0);
    let from_ram: [&std::ffi::OsStr; 2] = ["--memory".as_ref(), image.as_ref()];
    let open = open_spans(&from_ram, &elf);
    assert_eq!(open["main"], gdb_fibs, "open spans against gdb's bt:\n{printed}");
    assert_eq!(open[board.irq_track], Vec::<String>::new());

    // Run 2: the same instruction count, the firmware's own dump written at the fault.
    let again = scratch(&format!("fw-ram-{}-dump", board.target));
    let printed =
        gdb_session(board, &elf, &again, &["set var *(unsigned int *)&DUMP_AT_FAULT = 1".into(), "continue".into()]);
    let dump = again.join(board.dump);
    assert!(dump.exists(), "the fault handler wrote no dump:\n{printed}");
    let own = spans(&chrome(&[dump.as_os_str()], &elf));
    let read = spans(&chrome(&from_ram, &elf));

    // The main ring holds every span of the run: the same spans, the same times, the same open
    // ones. The interrupt's overwriting ring, read while its writer may have been mid-record,
    // leaves out its two oldest records if it wrapped: a suffix of the firmware's own.
    same(&read["main"], &own["main"], "the main track: read from RAM against the firmware's own dump");
    // The faulting call is the FAULT_AT-th: every earlier one completed, or is open around it.
    let completed = read["main"].iter().filter(|s| s.0 == fib && !s.3).count();
    assert_eq!(completed + gdb_fibs.len(), board.fault_at as usize);
    let (ours, theirs) = (&read[board.irq_track], &own[board.irq_track]);
    assert!(theirs.len() - ours.len() <= 2, "{} of {} interrupt spans", ours.len(), theirs.len());
    let theirs = &theirs[theirs.len() - ours.len()..];
    same(ours, theirs, "the interrupt track: read from RAM against the firmware's own dump");

    // Both cores, QEMU's and gdb's, hold the same memory at the same instant.
    let cores = if board.qemu_core { vec![&core, &gdb_core] } else { vec![&gdb_core] };
    for core in cores {
        let from_core = spans(&chrome(&[core.as_os_str()], &elf));
        assert_eq!(from_core.keys().collect::<Vec<_>>(), read.keys().collect::<Vec<_>>());
        for (thread, list) in &read {
            same(&from_core[thread], list, &format!("{thread}: {} against the RAM image", core.display()));
        }
        assert_eq!(open_spans(&[core.as_os_str()], &elf)["main"], gdb_fibs);
    }
}

#[test]
fn a_cortex_m3_firmware_stopped_by_a_hardfault_gives_its_spans_from_ram_and_gdbs_call_path() {
    run_to_the_fault(&CORTEX_M3);
}

#[test]
fn a_cortex_m0_firmware_stopped_by_a_hardfault_gives_its_spans_from_ram_and_gdbs_call_path() {
    run_to_the_fault(&Board {
        target: "thumbv6m-none-eabi",
        machine: &["-M", "microbit"],
        ram: (0x2000_0000, 16 << 10),
        fault_at: 177 + 100, // in round 1 of 2
        qemu_core: false,
        ..CORTEX_M3
    });
}

#[test]
fn a_riscv32_firmware_stopped_by_an_illegal_instruction_gives_its_spans_from_ram_and_gdbs_call_path() {
    run_to_the_fault(&RISCV32);
}

#[test]
fn a_riscv64_firmware_stopped_by_an_illegal_instruction_gives_its_spans_from_ram_and_gdbs_call_path() {
    run_to_the_fault(&Board { target: "riscv64gc-unknown-none-elf", qemu: "qemu-system-riscv64", ..RISCV32 });
}

/// Memory images that leave out the ring directory (only the ELF file's initial values of it are
/// there), or an ELF that is no ELF: one error line naming the image, exit 1.
#[test]
fn memory_images_without_the_ring_directory_are_refused_with_one_line() {
    let elf = build_firmware(CORTEX_M3.package, CORTEX_M3.target, None);
    let dir = scratch("fw-ram-bad");
    let zeros = dir.join("zeros.bin");
    std::fs::write(&zeros, vec![0u8; 4096]).unwrap();
    let image = format!("{}@0x30000000", zeros.display());
    for (elf, says) in [(elf.as_path(), "is not in the memory images"), (zeros.as_path(), "ELF file does not parse")] {
        let out = rtconv().arg("info").arg("--elf").arg(elf).args(["--memory", &image]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says) && stderr.contains("zeros.bin"), "{stderr}");
    }
    let out = rtconv().args(["info", "--memory", &image]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--memory needs --elf: {out:?}");
}
