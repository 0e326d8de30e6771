#!/usr/bin/env bash
# rtconv against uftrace on the same number of calls, in one run: the same
# two-thread recursive fib(N) recorded by uftrace (C, -pg) and by ringtrace
# (the workload sample), then each tool's Chrome JSON, text trace and
# statistics timed as CPU seconds (user + sys, /usr/bin/time), median of 3.
#
#   rtconv/benches/vs_uftrace.sh [N]      # N = 32: 2 x 7,049,155 fib calls
#
# Needs gcc and uftrace (apt-get install uftrace). Figures: docs/PERFORMANCE.md.
set -euo pipefail
N=${1:-32}
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --locked -q -p rtconv -p samples
gcc -O0 -pg -o "$work/fib" rtconv/benches/fib.c -lpthread
(cd "$work" && uftrace record --no-libcall -d data ./fib "$N" >/dev/null)
RINGTRACE_RING_RECORDS=16777216 target/release/workload --fib "$N" --out "$work/big.rtd" 2>/dev/null
calls=$(uftrace report -d "$work/data" -s call 2>/dev/null | awk '$NF == "fib" { print $(NF-1) }' | tr -d ,)
spans=$(target/release/rtconv info "$work/big.rtd" | awk '/spans/ && /threads/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^spans/) print $i; exit }')

# Median CPU seconds of three runs of a command, its stdout discarded.
cpu() {
  for _ in 1 2 3; do
    /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.2f\n", $1 + $2 }'
  done | sort -n | sed -n 2p
}

row() { # task, uftrace CPU-s, rtconv CPU-s
  awk -v t="$1" -v u="$2" -v r="$3" -v c="$calls" -v s="$spans" 'BEGIN {
    printf "| %s | %.2f CPU-s | %.2f CPU-s | %.1f M -> %.1f M | %.1fx |\n", t, u, r, c / u / 1e6, s / r / 1e6, (s / r) / (c / u) }'
}

R=target/release/rtconv
echo "uftrace $(uftrace --version | head -1 | awk '{print $2}'): $calls fib calls; rtconv: $spans spans"
echo "| task | uftrace | rtconv | calls per CPU-second | ratio |"
echo "|---|---:|---:|---:|---:|"
row "Chrome JSON (\`dump --chrome\` / \`convert -f chrome\`)" "$(cpu uftrace dump --chrome -d "$work/data")" "$(cpu $R convert "$work/big.rtd" -f chrome)"
row "text trace (\`replay\` / \`convert -f ftrace\`)" "$(cpu uftrace replay -d "$work/data")" "$(cpu $R convert "$work/big.rtd" -f ftrace)"
row "statistics (\`report\` / \`stats\`)" "$(cpu uftrace report -d "$work/data")" "$(cpu $R stats "$work/big.rtd")"
echo "peak RSS of rtconv convert -f chrome: $(/usr/bin/time -f %M $R convert "$work/big.rtd" 2>&1 >/dev/null | tail -1) KiB; dump $(stat -c %s "$work/big.rtd") bytes"
