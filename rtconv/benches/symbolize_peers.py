#!/usr/bin/env python3
"""`rtconv symbolize` against the symbolizers people use, on binaries nobody
here wrote, per CPU-second, in one run (issue 18).

    python3 rtconv/benches/symbolize_peers.py [--rounds 11] [--work DIR]

Subjects, built by this script on first use (in --work, default
/tmp/rtconv-symbench):
  - ripgrep 15.2.0 with full DWARF (Rust, LLVM DWARF 4, 60 MB):
      CARGO_PROFILE_RELEASE_DEBUG=2 CARGO_PROFILE_RELEASE_STRIP=none \\
          cargo install --locked --root WORK/rg ripgrep --version 15.2.0
  - cppcheck 2.10 (C++, GCC DWARF 5, 100 MB), Debian's source tarball:
      make -j2 CXXFLAGS="-O2 -g -std=c++11" MATCHCOMPILER=no cppcheck
Addresses: 10,000 and 1,000 distinct addresses sampled uniformly over the
bytes of the subject's functions (nm), fixed seeds. Every tool runs as a
process per round with the same flags (`-a -f -i -C`; llvm-symbolizer
`--obj BIN -a -f -i -C`; blazecli `symbolize elf`, addresses as
arguments), stdout to /dev/null; the tools run interleaved, round after
round, in an order shuffled each round (fixed seed), so a machine that
slows down slows all alike and no tool always runs after the same one. Reported: the median
wall and CPU time (user + sys) of each, and the median over rounds of each
tool's CPU time divided by rtconv's (one thread). Peers not found are left
out: the addr2line crate's CLI (A2L, default /tmp/tools/a2l/bin/addr2line:
`cargo install --root /tmp/tools/a2l addr2line --features bin --locked`),
blazecli (BLAZECLI, default /tmp/tools/blaze/bin/blazecli), llvm-symbolizer
and GNU addr2line from PATH. rtconv runs cold (RTCONV_SYMBOL_INDEX=off) on
one and on two threads (RAYON_NUM_THREADS), and warm: from its symbol index,
written by one run before the rounds.
"""

import argparse
import bisect
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, **kw):
    subprocess.run(cmd, check=True, **kw)


def ripgrep(work):
    exe = os.path.join(work, "rg", "bin", "rg")
    if not os.path.exists(exe):
        env = dict(os.environ, CARGO_PROFILE_RELEASE_DEBUG="2", CARGO_PROFILE_RELEASE_STRIP="none")
        run(["cargo", "install", "--locked", "--root", os.path.join(work, "rg"), "ripgrep", "--version", "15.2.0"],
            env=env)
    return exe


def cppcheck(work):
    src = os.path.join(work, "cppcheck-2.10")
    exe = os.path.join(src, "cppcheck")
    if not os.path.exists(exe):
        tarball = os.path.join(work, "cppcheck_2.10.orig.tar.gz")
        if not os.path.exists(tarball):
            run(["curl", "-sSfL", "-o", tarball,
                 "http://deb.debian.org/debian/pool/main/c/cppcheck/cppcheck_2.10.orig.tar.gz"])
        run(["tar", "xzf", tarball, "-C", work])
        run(["make", "-j2", "CXXFLAGS=-O2 -g -std=c++11", "MATCHCOMPILER=no", "cppcheck"], cwd=src,
            stdout=subprocess.DEVNULL)
    return exe


def addresses(binary, count, seed):
    """`count` distinct addresses sampled uniformly over the bytes of `binary`'s functions."""
    nm = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    functions = sorted({(int(a, 16), int(s, 16)) for a, s, kind, _ in
                        (line.split() for line in nm.splitlines() if len(line.split()) == 4)
                        if kind in "tTwW" and int(s, 16) > 0})
    ends, total = [], 0
    for _, size in functions:
        total += size
        ends.append(total)
    rng, chosen = random.Random(seed), set()
    while len(chosen) < count:
        x = rng.randrange(total)
        i = bisect.bisect_right(ends, x)
        start, size = functions[i]
        chosen.add(start + x - (ends[i] - size))
    picked = sorted(chosen)
    rng.shuffle(picked)
    return [hex(a) for a in picked]


def tools(rtconv, binary, index_dir):
    flags = ["-a", "-f", "-i", "-C"]
    cold = {"RTCONV_SYMBOL_INDEX": "off"}
    out = [
        ("rtconv, 1 thread", dict(cold, RAYON_NUM_THREADS="1"), [rtconv, "symbolize", *flags, "-e", binary], False),
        ("rtconv, 2 threads", dict(cold, RAYON_NUM_THREADS="2"), [rtconv, "symbolize", *flags, "-e", binary], False),
        ("rtconv, warm index, 1 thread", {"RTCONV_SYMBOL_INDEX": index_dir, "RAYON_NUM_THREADS": "1"},
         [rtconv, "symbolize", *flags, "-e", binary], False),
    ]
    a2l = os.environ.get("A2L", "/tmp/tools/a2l/bin/addr2line")
    if os.path.exists(a2l):
        out.append(("addr2line crate CLI", {}, [a2l, *flags, "-e", binary], False))
    blaze = os.environ.get("BLAZECLI", "/tmp/tools/blaze/bin/blazecli")
    if os.path.exists(blaze):
        out.append(("blazecli", {}, [blaze, "symbolize", "elf", "--path", binary], True))
    if shutil.which("llvm-symbolizer"):
        out.append(("llvm-symbolizer", {}, ["llvm-symbolizer", "--obj", binary, *flags], False))
    if shutil.which("addr2line"):
        out.append(("GNU addr2line", {}, ["addr2line", *flags, "-e", binary], False))
    return out


def timed(env, cmd, in_args, addrs, stdin_path):
    full_env = dict(os.environ, **env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    if in_args:
        subprocess.run(cmd + addrs, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=full_env, check=True)
    else:
        with open(stdin_path) as f:
            subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=full_env,
                           check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--work", default="/tmp/rtconv-symbench")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    run(["cargo", "build", "--release", "--locked", "-q", "-p", "rtconv"], cwd=ROOT)
    rtconv = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "rtconv")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}; {args.rounds} rounds, interleaved\n")
    for name, build in [("ripgrep 15.2.0", ripgrep), ("cppcheck 2.10", cppcheck)]:
        binary = build(args.work)
        for count, seed in [(10_000, 1), (1_000, 2)]:
            addrs = addresses(binary, count, seed)
            with tempfile.TemporaryDirectory() as tmp:
                stdin_path = os.path.join(tmp, "addresses")
                with open(stdin_path, "w") as f:
                    f.write("\n".join(addrs) + "\n")
                index_dir = os.path.join(tmp, "index")
                with open(stdin_path) as f:
                    subprocess.run([rtconv, "symbolize", "-a", "-f", "-i", "-C", "-e", binary], stdin=f,
                                   stdout=subprocess.DEVNULL, env=dict(os.environ, RTCONV_SYMBOL_INDEX=index_dir),
                                   check=True)
                table = tools(rtconv, binary, index_dir)
                walls = {t[0]: [] for t in table}
                cpus = {t[0]: [] for t in table}
                order = random.Random(count)
                for _ in range(args.rounds):
                    for label, env, cmd, in_args in order.sample(table, len(table)):
                        wall, used = timed(env, cmd, in_args, addrs, stdin_path)
                        walls[label].append(wall)
                        cpus[label].append(used)
            reference = cpus["rtconv, 1 thread"]
            print(f"{name}, {count:,} addresses")
            print("| tool | wall | CPU | CPU / rtconv's (1 thread) |")
            print("|---|---:|---:|---:|")
            for label, *_ in table:
                ratio = statistics.median(c / r for c, r in zip(cpus[label], reference))
                print(f"| {label} | {statistics.median(walls[label]) * 1000:.0f} ms "
                      f"| {statistics.median(cpus[label]) * 1000:.0f} ms | {ratio:.2f} |")
            print()
            sys.stdout.flush()


if __name__ == "__main__":
    main()
