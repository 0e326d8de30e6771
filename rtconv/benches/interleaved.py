#!/usr/bin/env python3
"""Wall-clock and CPU seconds of several commands run in turn, round after round (which goes
first rotating), and, for each, the median over rounds of its time over the last command's — so a
machine that slows down slows all alike. For work on a second core, where CPU and wall time part.

    interleaved.py ROUNDS NAME=CMD... NAME=CMD

Each CMD is split on spaces; stdout and stderr to /dev/null. CPU is user + sys from getrusage.
Prints, per command: median wall (ratio to the last), median CPU (ratio to the last), and the
fastest wall time (ratio to the last command's fastest): on a virtual machine whose memory and
CPU are shared, times run long in bursts (a tail of 1.5x the median), and the fastest is the
figure least moved by them.
"""

import resource
import statistics
import subprocess
import sys
import time


def run(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    rounds = int(sys.argv[1])
    named = [spec.split("=", 1) for spec in sys.argv[2:]]
    walls = [[] for _ in named]
    cpus = [[] for _ in named]
    for r in range(rounds):
        order = list(range(len(named)))
        order = order[r % len(order):] + order[:r % len(order)]
        for i in order:
            wall, cpu = run(named[i][1].split())
            walls[i].append(wall)
            cpus[i].append(cpu)
    ref = len(named) - 1
    for i, (name, _) in enumerate(named):
        wall = statistics.median(walls[i][k] / walls[ref][k] for k in range(rounds))
        cpu = statistics.median(cpus[i][k] / cpus[ref][k] for k in range(rounds))
        fastest = min(walls[i]) / min(walls[ref])
        print(f"{name:10s} wall {statistics.median(walls[i]):.3f} ({wall:.3f})  "
              f"cpu {statistics.median(cpus[i]):.3f} ({cpu:.3f})  "
              f"fastest {min(walls[i]):.3f} ({fastest:.3f})")


if __name__ == "__main__":
    main()
