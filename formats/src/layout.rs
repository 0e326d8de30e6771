//! The on-disk layout of format version 1: constants, sizes and enumerations.
//!
//! `formats/FORMAT.md` is the normative description; the sizes here are pinned
//! to it by `on_disk_sizes_are_pinned` in `tests/roundtrip.rs`.

/// The first eight bytes of every dump.
pub const MAGIC: [u8; 8] = *b"RNGTRACE";
/// Written in the writer's byte order; tells the reader which order the file uses.
pub const ENDIAN_PROBE: u32 = 0x0102_0304;
/// The major version this crate writes. A reader accepts every major up to this one.
pub const VERSION_MAJOR: u16 = 1;
/// The minor version this crate writes. Minor versions only append fields and section kinds.
pub const VERSION_MINOR: u16 = 5;
/// The format versions this crate reads, oldest and newest major.
pub const SUPPORTED_MAJORS: (u16, u16) = (1, 1);

/// Size of the fixed file header.
pub const FILE_HEADER_SIZE: usize = 32;
/// Size of a section header (kind, flags, payload length).
pub const SECTION_HEADER_SIZE: usize = 16;
/// Size of the CRC-32 that follows every section payload.
pub const SECTION_CRC_SIZE: usize = 4;
/// Sections start at multiples of this many bytes from the start of the file.
pub const SECTION_ALIGN: usize = 8;
/// Size of one wide span record: key, enter ticks, exit ticks.
pub const RECORD_SIZE: usize = 24;
/// Size of one compact span record (since 1.1): `u32 key`, `u32 enter`, `u32 exit`, for 32-bit targets.
pub const COMPACT_RECORD_SIZE: usize = 12;

/// Whether a ring whose record words are `record_word_bytes` long (a 32-bit target's are 4),
/// timed by a counter of `counter_bits`, is written as compact records: the recorder's dumps
/// and `rtconv`'s reading of a snapshot both decide so.
pub const fn records_compact(record_word_bytes: usize, counter_bits: u32) -> bool {
    record_word_bytes == 4 || counter_bits <= 32
}
/// The key of a compact argument record: `u32::MAX`, read as [`ARG_KEY`].
pub const COMPACT_ARG_KEY: u32 = u32::MAX;
/// The key of a wrap marker (since 1.1): not a span, only a counter reading
/// (`enter` = `exit` = the counter), written at least once per wrap period
/// of a narrow counter while nothing else is recorded, so readers can unwrap.
pub const WRAP_KEY: u64 = u64::MAX - 1;
/// [`WRAP_KEY`] in a compact record.
pub const COMPACT_WRAP_KEY: u32 = u32::MAX - 1;
/// The key of a flags record (since 1.3): not a span; its `enter` field holds
/// [`SPAN_FLAG_UNWOUND`] and its kin for the span record right after it, its `exit` field is 0.
pub const FLAGS_KEY: u64 = u64::MAX - 2;
/// [`FLAGS_KEY`] in a compact record.
pub const COMPACT_FLAGS_KEY: u32 = u32::MAX - 2;
/// Span flag: the span's function was left without its exit hook running (a
/// `longjmp`, or an exception through frames without cleanups); the span ends
/// where the recorder saw that, at the next hook of its thread.
pub const SPAN_FLAG_UNWOUND: u64 = 1;
/// Size of one open span in a ring section: key, enter ticks.
pub const OPEN_SPAN_SIZE: usize = 16;
/// Size of one clock anchor: counter ticks, monotonic ns, realtime ns.
pub const ANCHOR_SIZE: usize = 24;
/// Size of the fixed part of a site descriptor, before its label and file bytes.
pub const SITE_HEADER_SIZE: usize = 16;
/// Identifies a site descriptor in memory and in the site section.
pub const SITE_MAGIC: u32 = 0x5349_5445; // "SITE"
/// Site descriptors are aligned to this many bytes.
pub const SITE_ALIGN: usize = 8;

/// Size of one entry of the unbalanced section: tid, too deep, abandoned.
pub const UNBALANCED_ENTRY_SIZE: usize = 24;
/// Size of one calibration entry.
pub const CALIBRATION_ENTRY_SIZE: usize = 4 + 4 + 8 + 8;

/// Size of the end marker section: header and CRC, padded to 8 bytes.
pub const END_SECTION_SIZE: usize = 24;

/// Fixed part of a ring section before the thread name.
pub const RING_FIXED_SIZE: usize = 8 + 8 + 8 + 8 + 8 + 4 + 4;

/// What a section holds. Unknown kinds are skipped by readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    /// Producer, process and why the dump was taken.
    Meta,
    /// Counter kind, width, rate and time anchors.
    Clock,
    /// Loaded modules: path, build-id, load bias, address range.
    Modules,
    /// One thread's ring of span records.
    Ring,
    /// A copy of the program's site-descriptor linker section.
    Sites,
    /// The recorder's own measured cost per span, per clock.
    Calibration,
    /// `dladdr` results for the dump's code-address keys.
    Dladdr,
    /// Per thread, spans the `-finstrument-functions` hooks could not record (since 1.1).
    Unbalanced,
    /// Names of the dump's keys, appended by `rtconv pack` where the binaries were (since 1.2).
    Names,
    /// One more time anchor, written while a stream runs (since 1.3).
    Anchor,
    /// How the process ended, for a dump read out of a core (since 1.5).
    Crash,
    /// The end marker: the last section of a complete dump.
    End,
    /// A kind this reader does not know (written by a newer minor version).
    Unknown(u32),
}

impl SectionKind {
    /// The kind's number on disk.
    pub const fn code(self) -> u32 {
        match self {
            SectionKind::Meta => 1,
            SectionKind::Clock => 2,
            SectionKind::Modules => 3,
            SectionKind::Ring => 4,
            SectionKind::Sites => 5,
            SectionKind::Calibration => 6,
            SectionKind::Dladdr => 7,
            SectionKind::Unbalanced => 8,
            SectionKind::Names => 9,
            SectionKind::Anchor => 10,
            SectionKind::Crash => 11,
            SectionKind::End => 0xFFFF_FFFF,
            SectionKind::Unknown(code) => code,
        }
    }

    /// The kind for a number read from disk.
    pub const fn from_code(code: u32) -> Self {
        match code {
            1 => SectionKind::Meta,
            2 => SectionKind::Clock,
            3 => SectionKind::Modules,
            4 => SectionKind::Ring,
            5 => SectionKind::Sites,
            6 => SectionKind::Calibration,
            7 => SectionKind::Dladdr,
            8 => SectionKind::Unbalanced,
            9 => SectionKind::Names,
            10 => SectionKind::Anchor,
            11 => SectionKind::Crash,
            0xFFFF_FFFF => SectionKind::End,
            other => SectionKind::Unknown(other),
        }
    }

    /// A short lowercase name for messages.
    pub const fn name(self) -> &'static str {
        match self {
            SectionKind::Meta => "meta",
            SectionKind::Clock => "clock",
            SectionKind::Modules => "modules",
            SectionKind::Ring => "ring",
            SectionKind::Sites => "sites",
            SectionKind::Calibration => "calibration",
            SectionKind::Dladdr => "dladdr",
            SectionKind::Unbalanced => "unbalanced",
            SectionKind::Names => "names",
            SectionKind::Anchor => "anchor",
            SectionKind::Crash => "crash",
            SectionKind::End => "end",
            SectionKind::Unknown(_) => "unknown",
        }
    }
}

macro_rules! code_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal, $label:literal;)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A value this reader does not know; kept as read.
            Other(u32),
        }

        impl $name {
            /// The value's number on disk.
            pub const fn code(self) -> u32 {
                match self {
                    $($name::$variant => $code,)*
                    $name::Other(code) => code,
                }
            }

            /// The value for a number read from disk.
            pub const fn from_code(code: u32) -> Self {
                match code {
                    $($code => $name::$variant,)*
                    other => $name::Other(other),
                }
            }

            /// What tools call the value in their output (`unknown` for [`Other`]($name::Other)).
            pub const fn label(self) -> &'static str {
                match self {
                    $($name::$variant => $label,)*
                    $name::Other(_) => "unknown",
                }
            }
        }
    };
}

code_enum!(
    /// Which hardware or software counter produced the ticks.
    CounterKind {
        /// A counter supplied by the program through the `Clock` trait.
        User = 0, "user counter";
        /// x86 time-stamp counter read with `rdtsc`.
        X86Tsc = 1, "x86 TSC";
        /// AArch64 virtual counter `CNTVCT_EL0`.
        Aarch64Cntvct = 2, "CNTVCT_EL0";
        /// The operating system's monotonic clock in nanoseconds.
        MonotonicNs = 3, "monotonic ns";
        /// The Cortex-M DWT cycle counter `CYCCNT` (32 bits, since 1.1).
        ArmDwtCyccnt = 4, "Cortex-M DWT CYCCNT";
        /// The Cortex-M SysTick down-counter, its reloads counted (32 bits, since 1.2).
        ArmSysTick = 5, "Cortex-M SysTick";
        /// The RISC-V `mcycle` counter (since 1.2).
        RiscvMcycle = 6, "RISC-V mcycle";
        /// The RISC-V platform timer `mtime` (since 1.2).
        RiscvMtime = 7, "RISC-V mtime";
    }
);

code_enum!(
    /// Where the nominal counter rate in the clock section came from.
    RateSource {
        /// No nominal rate; only the anchors give it.
        Unknown = 0, "unknown";
        /// CPUID leaves 0x15/0x16.
        Cpuid = 1, "CPUID";
        /// Measured against the OS clock by the recorder.
        Calibrated = 2, "calibrated";
        /// An architectural register such as `CNTFRQ_EL0`.
        Register = 3, "CNTFRQ";
        /// Exact by construction: the counter counts nanoseconds.
        Exact = 4, "exact";
        /// Given by the program.
        User = 5, "given by the program";
    }
);

code_enum!(
    /// Why the dump was written.
    DumpReason {
        /// Not stated.
        Unspecified = 0, "unspecified";
        /// The program asked for it.
        Requested = 1, "requested";
        /// At process exit.
        Exit = 2, "exit";
        /// On a signal or crash.
        Signal = 3, "signal";
        /// A ring filled up.
        RingFull = 4, "ring full";
        /// The program panicked.
        Panic = 5, "panic";
        /// Streamed while the program ran (since 1.3): the file grows chunk by chunk and is
        /// readable at every section boundary.
        Stream = 6, "stream";
        /// Read out of a core file by `rtconv` (since 1.5): the rings as the process left them.
        Core = 7, "core file";
    }
);

code_enum!(
    /// Which way of naming found a packed name (names section, since 1.2).
    NameSource {
        /// A site descriptor in the dump's site section.
        Site = 1, "sites";
        /// DWARF line and inline info.
        Dwarf = 2, "dwarf";
        /// An ELF symbol table.
        Symtab = 3, "symtab";
        /// The dump's dladdr table.
        Dladdr = 4, "dladdr";
        /// An external addr2line-compatible program.
        Addr2line = 5, "addr2line";
    }
);

/// Size of the fixed part of a names entry: key, source, frame count.
pub const NAME_ENTRY_FIXED_SIZE: usize = 8 + 4 + 4;

/// A record with this key is not a span: it carries an integer argument
/// (in its `enter` field) of the record that follows it in the same ring.
pub const ARG_KEY: u64 = u64::MAX;

/// Flag bit in a module entry: this module is the main executable.
pub const MODULE_FLAG_MAIN: u32 = 1;
/// Flag bit in a ring section: the thread had exited when the dump was taken.
pub const RING_FLAG_THREAD_EXITED: u32 = 1;
/// Flag bit in a ring section: the ring stops when full (it never overwrites).
pub const RING_FLAG_STOP_WHEN_FULL: u32 = 2;
/// Flag bit in a ring section (since 1.3): a chunk of a streamed ring, whose
/// payload ends with `u64 stream id` and `u64 first` (the ring's ordinal of
/// its first record); see [`crate::read::StreamChunk`].
pub const RING_FLAG_STREAM_CHUNK: u32 = 4;
/// Flag bit in a ring section (since 1.4): the keys of its span records
/// carry the span's nesting depth in their top byte; see [`split_key`].
pub const RING_FLAG_KEY_DEPTH: u32 = 8;
/// Where a key's depth tag sits: its top byte.
pub const KEY_DEPTH_SHIFT: u32 = 56;

/// A span key's depth tag for a span that began with `depth` spans open on
/// its thread: `depth + 1` in the top byte, exact for depths 0..=254; at 255
/// it wraps to 0, "depth unknown". `depth` is at most 255 (a recorder's depth
/// counter saturates there); `key | key_depth_tag(depth)` is the tagged key
/// (keys are addresses, below 2^56).
#[inline(always)]
pub const fn key_depth_tag(depth: u64) -> u64 {
    depth.wrapping_add(1) << KEY_DEPTH_SHIFT
}

/// A span record's key in a ring with [`RING_FLAG_KEY_DEPTH`], as (the key,
/// the span's depth if the tag states it).
#[inline(always)]
pub const fn split_key(raw: u64) -> (u64, Option<u8>) {
    match key_and_tag(raw) {
        (key, 0) => (key, None),
        (key, tag) => (key, Some(tag - 1)),
    }
}

/// [`split_key`] with the depth tag as it is stored: depth + 1, or 0 where
/// the tag states no depth.
#[inline(always)]
pub const fn key_and_tag(raw: u64) -> (u64, u8) {
    (raw & ((1 << KEY_DEPTH_SHIFT) - 1), (raw >> KEY_DEPTH_SHIFT) as u8)
}

/// Bytes a stream chunk appends to a ring section's payload.
pub const STREAM_CHUNK_TAIL_SIZE: usize = 16;

code_enum!(
    /// Which counter read a calibration entry measured.
    ClockMode {
        /// `rdtsc` (or the target's plain counter read).
        Fast = 1, "fast";
        /// `rdtscp`.
        Ordered = 2, "ordered";
        /// `lfence; rdtsc`.
        Serialized = 3, "serialized";
    }
);
