//! Live from the target: the firmware samples built with `stream` run 200
//! rounds on QEMU — 36,400 spans of the main loop, nine times what its ring
//! holds — streaming their spans while they run (`ringtrace::bare::stream`),
//! and `rtconv` converts them as they arrive. The truth is the firmware's own
//! count of what it did (`rounds R irq N fib F dropped M I`, printed through
//! semihosting at the end, from counters apart from the recorder).
//!
//! - UART: the board's emulated UART goes to `-serial tcp:` (rtconv reads
//!   `tcp://`, and QEMU waits for it) or `-serial file:` (two rtconvs follow
//!   the growing file, `--follow`).
//! - RTT: there is no debug probe here; this test plays the probe's part
//!   through QEMU's gdb stub as a probe does through its debug port — finds
//!   the control block by its ID string in the firmware's RAM, reads the
//!   up-buffer between the read and write offsets, writes the read offset
//!   back — except that the core is halted for each read (a probe reads the
//!   bus in the background), and a read happens each time the firmware looks
//!   at the read offset (a watchpoint; a probe polls), so how fast the probe
//!   reads is set by how many bytes it takes a read, not by the host's speed.
//!   The bytes go to rtconv's standard input. Throttled, the firmware drops
//!   spans and counts them.
//! - A stream cut when QEMU is killed, and rtconv stopped by Ctrl-C.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use object::{Object, ObjectSegment, ObjectSymbol};
use ringtrace_tests::{build_firmware, parse_chrome, rtconv, rtconv_ok, scratch, tool};

/// A streaming firmware sample and its board.
struct Board<'a> {
    package: &'a str,
    target: &'a str,
    qemu: &'a str,
    machine: &'a [&'a str],
    /// The name of the interrupt's track.
    irq_track: &'a str,
}

const CORTEX_M3: Board<'static> = Board {
    package: "fw-cortex-m",
    target: "thumbv7m-none-eabi",
    qemu: "qemu-system-arm",
    machine: &["-M", "mps2-an385", "-cpu", "cortex-m3"],
    irq_track: "SysTick",
};

const RISCV32: Board<'static> = Board {
    package: "fw-riscv",
    target: "riscv32imac-unknown-none-elf",
    qemu: "qemu-system-riscv32",
    machine: &["-M", "virt", "-bios", "none"],
    irq_track: "timer",
};

/// What the firmware says it did: `rounds R irq N fib F dropped M I`.
#[derive(Debug)]
struct Counts {
    rounds: u64,
    irq: u64,
    fib: u64,
    dropped: u64,
}

impl Counts {
    fn parse(printed: &str) -> Counts {
        let line =
            printed.lines().find(|l| l.starts_with("rounds ")).unwrap_or_else(|| panic!("no counts in {printed:?}"));
        let n: Vec<u64> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
        assert_eq!(n.len(), 5, "{line}");
        Counts { rounds: n[0], irq: n[1], fib: n[2], dropped: n[3] + n[4] }
    }

    /// Spans per name, as the sample's code makes them.
    fn per_name(&self, package: &str) -> BTreeMap<String, u64> {
        let p = package.replace('-', "_");
        BTreeMap::from([
            (format!("{p}::fib"), self.fib),
            (format!("{p}::middle"), self.rounds),
            (format!("{p}::leaf"), 3 * self.rounds),
            ("loop".to_string(), self.rounds - 1),
            (format!("{p}::irq_work"), self.irq),
        ])
    }

    fn total(&self, package: &str) -> u64 {
        self.per_name(package).values().sum()
    }
}

/// QEMU running `elf` with `serial` as its UART, semihosting on (its console on stdout).
fn qemu(board: &Board<'_>, elf: &Path, dir: &Path, serial: &str) -> Command {
    let mut cmd = tool("timeout");
    cmd.args(["-s", "KILL", "300", board.qemu])
        .args(board.machine)
        .args(["-display", "none", "-monitor", "none", "-serial", serial])
        .args(["-semihosting-config", "enable=on,target=native", "-icount", "shift=5", "-kernel"])
        .arg(elf)
        .current_dir(dir);
    cmd
}

/// The port QEMU (started with `-serial tcp:127.0.0.1:0,server=on,wait=on` and its stderr piped)
/// waits for a connection on: its ready line says it. Returned with the rest of its stderr, which
/// stays open while QEMU runs.
fn listening_port(qemu: &mut Child) -> (String, BufReader<std::process::ChildStderr>) {
    let mut stderr = BufReader::new(qemu.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "QEMU ended before listening");
        // `… waiting for connection on: disconnected:tcp:127.0.0.1:PORT,server=on` (the last
        // address on the line: the first is the command line's, port 0).
        if let Some(at) = line.rfind("tcp:127.0.0.1:") {
            let port = line[at + "tcp:127.0.0.1:".len()..].split(',').next().unwrap().trim().to_string();
            return (port, stderr);
        }
    }
}

/// `rtconv`'s summary line (`… received N spans …; L lost on the link, D dropped by the target`):
/// (received, lost, dropped).
fn summary(stderr: &str) -> (u64, u64, u64) {
    let line = stderr.lines().find(|l| l.contains(" received ")).unwrap_or_else(|| panic!("no summary: {stderr}"));
    let number = |after: &str| -> u64 {
        let at = line.find(after).unwrap_or_else(|| panic!("{after:?} not in {line}")) + after.len();
        line[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let before = |word: &str| -> u64 {
        let at = line.find(word).unwrap_or_else(|| panic!("{word:?} not in {line}"));
        line[..at].trim_end().rsplit(' ').next().unwrap().parse().unwrap()
    };
    (number(" received "), before(" lost on the link"), before(" dropped by the target"))
}

/// Spans per name in a Perfetto trace (decoded with the official schema).
fn perfetto_counts(trace: &Path) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for s in super::perfetto::slices(trace) {
        *counts.entry(s[1].as_str().unwrap().to_string()).or_default() += 1;
    }
    counts
}

/// Spans per name in ftrace function_graph text: entry lines `name() {` and leaf lines `name();`.
fn ftrace_counts(text: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(call) = line.rsplit('|').next() else { continue };
        let call = call.trim();
        if let Some(name) = call.strip_suffix("() {").or_else(|| call.strip_suffix("();")) {
            *counts.entry(name.to_string()).or_default() += 1;
        }
    }
    counts
}

/// Over the UART, live: `rtconv stats tcp://…` while QEMU serves the UART on TCP; then over a
/// file two rtconvs follow as it grows, writing Perfetto and ftrace as spans arrive.
fn uart(board: &Board<'_>) {
    let elf = build_firmware(board.package, board.target, Some("stream"));
    let dir = scratch(&format!("stream-uart-{}", board.target));

    // TCP: QEMU waits for the connection and says where it listens (a ready line).
    let mut q = qemu(board, &elf, &dir, "tcp:127.0.0.1:0,server=on,wait=on")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (port, _qemu_stderr) = listening_port(&mut q);
    let stats = dir.join("live-stats.csv");
    let out = rtconv()
        .args(["stats", &format!("tcp://127.0.0.1:{port}"), "--exe"])
        .arg(&elf)
        .arg("-o")
        .arg(&stats)
        .output()
        .unwrap();
    let q = q.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&q.stdout);
    assert_eq!(q.status.code(), Some(0), "{printed}");
    let counts = Counts::parse(&printed);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("the stream ended"), "{stderr}");
    assert_eq!(summary(&stderr), (counts.total(board.package), 0, 0), "{stderr}");
    assert_eq!(counts.dropped, 0, "the firmware waited for the UART: nothing dropped");
    let csv = std::fs::read_to_string(&stats).unwrap();
    let calls: BTreeMap<String, u64> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1].to_string(), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(calls, counts.per_name(board.package), "{csv}");
    assert!(counts.total(board.package) > 9 * 4096, "a run far longer than the main ring holds");

    // A file, followed by two rtconvs as QEMU writes it.
    let capture = dir.join("uart.rtw");
    std::fs::write(&capture, b"").unwrap();
    let follow = |args: &[&str]| {
        rtconv()
            .arg("convert")
            .arg("--follow")
            .arg(&capture)
            .arg("--exe")
            .arg(&elf)
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (pftrace, ftrace) = (dir.join("live.pftrace"), dir.join("live.ftrace.txt"));
    let followers =
        [follow(&["-o", pftrace.to_str().unwrap()]), follow(&["-f", "ftrace", "-o", ftrace.to_str().unwrap()])];
    let q = qemu(board, &elf, &dir, &format!("file:{}", capture.display())).output().unwrap();
    let printed = String::from_utf8_lossy(&q.stdout);
    assert_eq!(q.status.code(), Some(0), "{printed}");
    let counts = Counts::parse(&printed);
    for f in followers {
        let out = f.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(summary(&stderr), (counts.total(board.package), 0, 0), "{stderr}");
    }
    let expected = counts.per_name(board.package);
    // What the link carried: the whole stream (info, sites, spans and end frames) a span.
    let bytes = std::fs::metadata(&capture).unwrap().len();
    let per_span = bytes as f64 / counts.total(board.package) as f64;
    eprintln!(
        "{}: {} spans streamed in {bytes} bytes: {per_span:.2} bytes a span",
        board.target,
        counts.total(board.package)
    );
    assert!(per_span <= 6.0, "{per_span:.2} bytes a span on the wire");
    assert_eq!(perfetto_counts(&pftrace), expected);
    assert_eq!(ftrace_counts(&std::fs::read_to_string(&ftrace).unwrap()), expected);
    // The parts written live are the spans the whole capture converts to: same threads, names,
    // times and durations (times from the first span).
    let whole = parse_chrome(&rtconv_ok(&[
        "convert".as_ref(),
        capture.as_os_str(),
        "--exe".as_ref(),
        elf.as_os_str(),
        "-o".as_ref(),
        "-".as_ref(),
    ]));
    let names: BTreeMap<u64, String> = whole.thread_names.iter().map(|(t, n)| (*t, n.clone())).collect();
    let first = whole.events.iter().map(|e| e.ts_ns).min().unwrap();
    let mut from_whole: Vec<(String, String, i64, i64)> =
        whole.events.iter().map(|e| (names[&e.tid].clone(), e.name.clone(), e.ts_ns - first, e.dur_ns)).collect();
    let live = super::perfetto::slices(&pftrace);
    let live_first = live.iter().map(|s| s[2].as_i64().unwrap()).min().unwrap();
    let tid_name = |tid: u64| if tid == 1 { "main".to_string() } else { board.irq_track.to_string() };
    let mut from_live: Vec<(String, String, i64, i64)> = live
        .iter()
        .map(|s| {
            (
                tid_name(s[0].as_u64().unwrap()),
                s[1].as_str().unwrap().into(),
                s[2].as_i64().unwrap() - live_first,
                s[3].as_i64().unwrap(),
            )
        })
        .collect();
    from_whole.sort();
    from_live.sort();
    assert_eq!(from_live.len(), from_whole.len());
    assert!(from_live == from_whole, "the live parts differ from the whole capture's spans");
}

#[test]
fn a_cortex_m3_firmware_streams_over_its_uart_and_rtconv_converts_it_live() {
    uart(&CORTEX_M3);
}

#[test]
fn a_riscv32_firmware_streams_over_its_uart_and_rtconv_converts_it_live() {
    uart(&RISCV32);
}

/// `rtconv convert - --exe ELF -o OUT`, reading a live capture from its standard input (returned).
fn live_rtconv(elf: &Path, out: &Path) -> (Child, ChildStdin) {
    let mut reader = rtconv()
        .args(["convert", "-", "--exe"])
        .arg(elf)
        .arg("-o")
        .arg(out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = reader.stdin.take().unwrap();
    (reader, stdin)
}

/// QEMU's gdb stub on a pipe: the remote serial protocol, each packet acknowledged. QEMU's
/// semihosting console shares the pipe: what comes outside packets (but acknowledgements).
struct Stub {
    to: ChildStdin,
    from: BufReader<ChildStdout>,
    console: Vec<u8>,
}

impl Stub {
    /// The stub of QEMU `q` (started with `-S -gdb stdio`, its stdin and stdout piped), the
    /// target run to `main`.
    fn attach(q: &mut Child, main: u64) -> Stub {
        let (to, from) = (q.stdin.take().unwrap(), BufReader::new(q.stdout.take().unwrap()));
        let mut stub = Stub { to, from, console: Vec::new() };
        assert!(stub.ask("qSupported").is_some_and(|r| r.contains("PacketSize")));
        stub.run_to_main(main);
        stub
    }

    fn send(&mut self, packet: &str) {
        let sum = packet.bytes().fold(0u8, u8::wrapping_add);
        write!(self.to, "${packet}#{sum:02x}").unwrap();
        self.to.flush().unwrap();
    }

    /// The next packet's data; `None` when the stub is gone (QEMU exited).
    fn reply(&mut self) -> Option<String> {
        let mut skipped = Vec::new();
        let found = self.from.read_until(b'$', &mut skipped).is_ok_and(|n| n > 0) && skipped.pop() == Some(b'$');
        self.console.extend(skipped.iter().filter(|&&b| b != b'+'));
        if !found {
            return None;
        }
        let mut data = Vec::new();
        self.from.read_until(b'#', &mut data).ok()?;
        let mut sum = [0u8; 2];
        self.from.read_exact(&mut sum).ok()?;
        data.pop();
        // Acknowledged (a closed pipe: QEMU is gone, which the next read says).
        let _ = self.to.write_all(b"+").and_then(|()| self.to.flush());
        Some(String::from_utf8(data).unwrap())
    }

    fn ask(&mut self, packet: &str) -> Option<String> {
        self.send(packet);
        self.reply()
    }

    fn read(&mut self, address: u64, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let n = (len - out.len()).min(1024);
            let hex = self.ask(&format!("m{:x},{n:x}", address + out.len() as u64)).unwrap();
            assert!(hex.len() == 2 * n, "reading {n} bytes at {address:#x}: {hex}");
            out.extend((0..n).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()));
        }
        out
    }

    fn write(&mut self, address: u64, bytes: &[u8]) {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(self.ask(&format!("M{address:x},{:x}:{hex}", bytes.len())).as_deref(), Some("OK"));
    }

    /// Runs the target from reset to `main`, where the runtime has set up its statics (which a
    /// write before would lose).
    fn run_to_main(&mut self, main: u64) {
        let main = main & !1; // a Thumb function's address has its low bit set
        assert_eq!(self.ask(&format!("Z0,{main:x},2")).as_deref(), Some("OK"));
        self.send("c");
        assert!(self.reply().is_some_and(|r| r.starts_with('T')), "stopped at main");
        assert_eq!(self.ask(&format!("z0,{main:x},2")).as_deref(), Some("OK"));
    }
}

/// The probe's view of an RTT control block (32-bit target): the up-buffer's data address and
/// size, and where its write and read offsets are.
struct UpBuffer {
    data: u64,
    size: u32,
    offsets: u64,
}

/// Streams over RTT, the probe's part played through QEMU's gdb stub, reading at most `per_read`
/// bytes each time it halts the target; the firmware waits for the link or (`wait` false)
/// drops what does not fit. Returns the firmware's counts and rtconv's summary and output.
fn rtt(board: &Board<'_>, wait: bool, per_read: usize) -> (Counts, (u64, u64, u64), BTreeMap<String, u64>) {
    let elf = build_firmware(board.package, board.target, Some("stream"));
    let dir = scratch(&format!("stream-rtt-{}-{wait}", board.target));
    let data = std::fs::read(&elf).unwrap();
    let file = object::File::parse(&*data).unwrap();
    assert!(!file.is_64());
    let symbol =
        |name: &str| file.symbols().find(|s| s.name() == Ok(name)).unwrap_or_else(|| panic!("no {name}")).address();
    // The RAM a probe would search: the firmware's writable segments.
    let ram: Vec<(u64, u64)> = file
        .segments()
        .filter(
            |s| matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if (p_flags & object::elf::PF_W).0 != 0),
        )
        .map(|s| (s.address(), s.size()))
        .collect();
    let mut q = tool("timeout")
        .args(["-s", "KILL", "300", board.qemu])
        .args(board.machine)
        .args(["-display", "none", "-monitor", "none", "-serial", "none", "-S", "-gdb", "stdio"])
        .args(["-semihosting-config", "enable=on,target=native", "-icount", "shift=5", "-kernel"])
        .arg(&elf)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stub = Stub::attach(&mut q, symbol("main"));
    stub.write(symbol("STREAM_RTT"), &1u32.to_le_bytes());
    stub.write(symbol("STREAM_WAIT"), &u32::from(wait).to_le_bytes());
    let pftrace = dir.join("rtt.pftrace");
    let (reader, mut to_rtconv) = live_rtconv(&elf, &pftrace);
    // The probe reads whenever the firmware looks at the up-buffer's read offset (to write,
    // or to see whether all was read): stopped by a read watchpoint on it (its place from the
    // `_SEGGER_RTT` symbol, as probe-rs takes it from the ELF), the control block checked to be
    // where its ID is found in RAM.
    let cb = symbol("_SEGGER_RTT");
    let offsets = cb + 16 + 8 + 12;
    let watch = offsets + 4;
    assert_eq!(stub.ask(&format!("Z3,{watch:x},4")).as_deref(), Some("OK"));
    let mut up: Option<UpBuffer> = None;
    loop {
        if !stub.ask("c").is_some_and(|r| r.starts_with('T')) {
            break; // the firmware exited
        }
        // QEMU stops before the load: step over it with the watchpoint out, as gdb does.
        assert_eq!(stub.ask(&format!("z3,{watch:x},4")).as_deref(), Some("OK"));
        assert!(stub.ask("s").is_some_and(|r| r.starts_with('T')));
        assert_eq!(stub.ask(&format!("Z3,{watch:x},4")).as_deref(), Some("OK"));
        let up = match &up {
            Some(up) => up,
            None => {
                // Found by its ID in RAM, once the firmware wrote it.
                let found = ram.iter().find_map(|&(start, len)| {
                    let bytes = stub.read(start, len as usize);
                    bytes.windows(16).position(|w| w == b"SEGGER RTT\0\0\0\0\0\0").map(|at| start + at as u64)
                });
                let Some(found) = found else { continue };
                assert_eq!(found, cb, "the ID string is where the symbol says");
                let b = stub.read(cb + 16, 8 + 24);
                let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
                assert_eq!((word(0), word(4)), (1, 0), "one up-buffer, no down-buffer");
                up.insert(UpBuffer { data: u64::from(word(12)), size: word(16), offsets })
            }
        };
        let o = stub.read(up.offsets, 8);
        let (write, read) =
            (u32::from_le_bytes(o[..4].try_into().unwrap()), u32::from_le_bytes(o[4..].try_into().unwrap()));
        let ready = ((write + up.size - read) % up.size) as usize;
        let n = ready.min(per_read);
        if n == 0 {
            continue;
        }
        let mut bytes = Vec::with_capacity(n);
        let first = n.min((up.size - read) as usize);
        bytes.extend(stub.read(up.data + u64::from(read), first));
        if first < n {
            bytes.extend(stub.read(up.data, n - first));
        }
        stub.write(up.offsets + 4, &((read + n as u32) % up.size).to_le_bytes());
        // rtconv stops reading at the stream's end: what follows has nowhere to go.
        let _ = to_rtconv.write_all(&bytes);
    }
    drop(to_rtconv);
    let out = reader.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // The rest of the console, up to QEMU's exit.
    stub.from.read_to_end(&mut stub.console).unwrap();
    assert!(q.wait().unwrap().success());
    let counts = Counts::parse(&String::from_utf8_lossy(&stub.console));
    // Drops the target counted are a warning, not a loss of the reading: exit 0.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("the stream ended"), "{stderr}");
    (counts, summary(&stderr), perfetto_counts(&pftrace))
}

/// Over RTT, the reader keeping up: every span the firmware made, by name.
fn rtt_exact(board: &Board<'_>) {
    let (counts, got, per_name) = rtt(board, true, 1 << 16);
    assert_eq!(got, (counts.total(board.package), 0, 0));
    assert_eq!(per_name, counts.per_name(board.package));
}

/// Over RTT, the reader throttled (64 bytes a halt) and the firmware not waiting: it drops
/// spans, and rtconv's count of them is the firmware's; the rest all arrive.
fn rtt_throttled(board: &Board<'_>) {
    let (counts, (received, lost, dropped), per_name) = rtt(board, false, 64);
    eprintln!(
        "{}: throttled RTT: {received} spans received, {dropped} dropped (the firmware says {})",
        board.target, counts.dropped
    );
    assert!(counts.dropped > 0, "a reader this slow makes the firmware drop spans");
    assert_eq!((dropped, lost), (counts.dropped, 0));
    assert_eq!(received + dropped, counts.total(board.package));
    assert_eq!(per_name.values().sum::<u64>(), received);
}

#[test]
fn a_cortex_m3_firmware_streams_over_rtt_to_a_probe_and_drops_exactly_what_a_slow_one_misses() {
    rtt_exact(&CORTEX_M3);
    rtt_throttled(&CORTEX_M3);
}

#[test]
fn a_riscv32_firmware_streams_over_rtt_to_a_probe_and_drops_exactly_what_a_slow_one_misses() {
    rtt_exact(&RISCV32);
    rtt_throttled(&RISCV32);
}

/// A live stream cut: QEMU killed in the middle. rtconv, reading what a relay passes on from
/// QEMU's UART, keeps every span up to the cut (those the same bytes convert to as a file) and
/// says the stream was cut; and stopped by Ctrl-C it leaves a whole trace of what it received.
#[test]
fn a_live_stream_cut_by_killing_qemu_keeps_every_span_before_the_cut_and_ctrl_c_leaves_a_whole_trace() {
    let board = CORTEX_M3;
    let elf = build_firmware(board.package, board.target, Some("stream"));
    let dir = scratch("stream-cut");
    let data = std::fs::read(&elf).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let symbol = |name: &str| file.symbols().find(|s| s.name() == Ok(name)).unwrap().address();
    let (rounds, main) = (symbol("STREAM_ROUNDS"), symbol("main"));
    for interrupt in [false, true] {
        // Held at its first instruction until a debugger lets it run 100,000 rounds (a stream
        // of some 70 MB): cut at 60 KB, it is cut in the middle.
        let mut q = qemu(&board, &elf, &dir, "tcp:127.0.0.1:0,server=on,wait=on")
            .args(["-S", "-gdb", "stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (port, _qemu_stderr) = listening_port(&mut q);
        let mut uart = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        let mut stub = Stub::attach(&mut q, main);
        stub.write(rounds, &100_000u32.to_le_bytes());
        stub.send("c");
        let pftrace = dir.join(format!("cut-{interrupt}.pftrace"));
        let (reader, mut to_rtconv) = live_rtconv(&elf, &pftrace);
        // Half the stream (it is about 150 KB), then QEMU killed; what was in flight follows.
        let mut passed = Vec::new();
        let mut buf = [0u8; 4096];
        let mut killed = false;
        loop {
            let n = uart.read(&mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            passed.extend_from_slice(&buf[..n]);
            to_rtconv.write_all(&buf[..n]).unwrap();
            if passed.len() >= 60_000 && !killed {
                // SIGTERM to `timeout`, which passes it on: QEMU ends at once.
                // SAFETY: kill(2) on a process this test started and has not reaped.
                assert_eq!(unsafe { libc::kill(q.id() as i32, libc::SIGTERM) }, 0);
                killed = true;
            }
        }
        q.wait().unwrap();
        assert!(killed, "the stream ended before half of it passed");
        if interrupt {
            // SAFETY: kill(2) on rtconv's pid, a process this test started and has not reaped.
            assert_eq!(unsafe { libc::kill(reader.id() as i32, libc::SIGINT) }, 0);
        } else {
            drop(to_rtconv);
        }
        let out = reader.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let (received, _, _) = summary(&stderr);
        let slices = super::perfetto::slices(&pftrace).len() as u64;
        assert_eq!(slices, received, "every span received is in the trace: {stderr}");
        if interrupt {
            assert!(stderr.contains("interrupted (Ctrl-C)"), "{stderr}");
            continue;
        }
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("the source closed"), "{stderr}");
        assert!(stderr.contains("the stream did not end"), "{stderr}");
        // Exactly the spans the bytes that came hold: as a file, they convert to as many.
        let file = dir.join("cut.rtw");
        std::fs::write(&file, &passed).unwrap();
        let whole = rtconv().arg("convert").arg(&file).arg("--exe").arg(&elf).args(["-o", "-"]).output().unwrap();
        assert_eq!(parse_chrome(&String::from_utf8_lossy(&whole.stdout)).events.len() as u64, received);
        assert!(received > 10_000, "{received} spans before the cut");
    }
}

/// A live output replaces the file at its path, as every output does: a hard link to that file
/// elsewhere keeps its bytes (a planted link cannot make rtconv write through it).
#[test]
fn a_live_output_replaces_its_file_and_writes_through_no_hard_link() {
    let dir = scratch("stream-live-hard-link");
    let capture = ringtrace_tests::workspace_root().join("tests/fuzz/regressions/stream-cortex-m0.rtw");
    let (elsewhere, out) = (dir.join("elsewhere.bin"), dir.join("live.pftrace"));
    std::fs::write(&elsewhere, b"not rtconv's to change").unwrap();
    std::fs::hard_link(&elsewhere, &out).unwrap();
    let done =
        rtconv().args(["convert", "-", "-o"]).arg(&out).stdin(std::fs::File::open(&capture).unwrap()).output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(stderr.contains(" received "), "{stderr}");
    assert_eq!(std::fs::read(&elsewhere).unwrap(), b"not rtconv's to change");
    assert!(!super::perfetto::slices(&out).is_empty(), "the trace is at the path: {stderr}");
    // A `.gz` name gets gzip, as every output's does.
    let gz = dir.join("live.pftrace.gz");
    let done =
        rtconv().args(["convert", "-", "-o"]).arg(&gz).stdin(std::fs::File::open(&capture).unwrap()).output().unwrap();
    assert!(String::from_utf8_lossy(&done.stderr).contains(" received "));
    assert!(std::fs::read(&gz).unwrap().starts_with(&[0x1f, 0x8b]), "gzip's magic");
}
