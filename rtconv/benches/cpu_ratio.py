#!/usr/bin/env python3
"""CPU seconds of two commands run in turn, round after round, and the median
over rounds of the first's over the second's — so a machine that slows down
slows both alike (rtconv/benches/vs_uftrace.sh).

    cpu_ratio.py ROUNDS CMD_A... -- CMD_B...

Prints `median_cpu_a median_cpu_b median_ratio`; stdout of both to /dev/null.
CPU is user + sys from getrusage (microseconds), per child; with CPU_RATIO_USER=1,
user time alone (what the program's own code costs, without the kernel's page faults).
Wall-clock time, and more than two commands: interleaved.py.
"""

import os
import resource
import statistics
import subprocess
import sys


def cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    if os.environ.get("CPU_RATIO_USER") == "1":
        return user
    return user + (after.ru_stime - before.ru_stime)


def main():
    rounds = int(sys.argv[1])
    split = sys.argv.index("--")
    a, b = sys.argv[2:split], sys.argv[split + 1:]
    times_a, times_b = [], []
    for i in range(rounds):
        # Alternate which goes first, so neither always runs on a warmer machine.
        if i % 2 == 0:
            times_a.append(cpu(a))
            times_b.append(cpu(b))
        else:
            times_b.append(cpu(b))
            times_a.append(cpu(a))
    ratio = statistics.median(x / y for x, y in zip(times_a, times_b))
    print(f"{statistics.median(times_a):.3f} {statistics.median(times_b):.3f} {ratio:.2f}")


if __name__ == "__main__":
    main()
