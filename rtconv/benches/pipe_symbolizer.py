#!/usr/bin/env python3
"""Time to the first answer and per answer of a symbolizer driven as the sanitizers drive one:
one process, `CODE "MODULE" 0xADDR` lines written one at a time over a pipe, each answer read
(up to its blank line) before the next is asked.

    rtconv/benches/pipe_symbolizer.py BINARY COUNT SYMBOLIZER [SYMBOLIZER ...]

Each SYMBOLIZER is a program answering llvm-symbolizer's protocol (llvm-symbolizer itself, or a
link to rtconv named llvm-symbolizer); each is run cold and then again (rtconv's second run
answers from its symbol index). Prints, per run, ms to the first answer and µs per answer after it.
"""
import os
import subprocess
import sys
import time


def addresses(binary, count):
    nm = subprocess.run(["nm", "--defined-only", "-S", binary], capture_output=True, text=True, check=True).stdout
    functions = []
    for line in nm.splitlines():
        words = line.split()
        if len(words) == 4 and words[2] in ("t", "T"):
            functions.append((int(words[0], 16), int(words[1], 16)))
    total = sum(size for _, size in functions)
    step = max(total // count, 1)
    return [a for start, size in functions for a in range(start, start + size, step)][:count]


def run(symbolizer, binary, addrs):
    proc = subprocess.Popen([symbolizer, "--demangle", "--inlines", "--default-arch=x86_64"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    times = []
    start = time.perf_counter()
    for a in addrs:
        proc.stdin.write(f'CODE "{binary}" {a:#x}\n'.encode())
        proc.stdin.flush()
        # An answer ends with a blank line.
        last = b""
        while True:
            line = proc.stdout.readline()
            if not line or (line == b"\n" and last.endswith(b"\n")):
                break
            last = line
        times.append(time.perf_counter())
    proc.stdin.close()
    proc.wait()
    first = (times[0] - start) * 1e3
    per = (times[-1] - times[0]) / max(len(times) - 1, 1) * 1e6
    return first, per


def main():
    binary, count, symbolizers = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    addrs = addresses(binary, count)
    print(f"{binary}: {len(addrs)} addresses, one at a time")
    for s in symbolizers:
        for label in ("cold", "again"):
            first, per = run(s, binary, addrs)
            print(f"{s:50} {label:6} first answer {first:8.1f} ms, then {per:8.1f} µs an answer")


if __name__ == "__main__":
    main()
