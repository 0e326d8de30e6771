#!/usr/bin/env bash
# rtconv against uftrace on the same calls, in one run: a program recorded by
# uftrace and by ringtrace, then each tool's Chrome JSON, text trace and
# statistics timed as CPU seconds (user + sys, getrusage): the two tools' commands run in turn,
# ROUNDS rounds (default 7), and the median over rounds of uftrace's CPU over rtconv's
# (rtconv/benches/cpu_ratio.py).
#
#   rtconv/benches/vs_uftrace.sh [N]      # fib: N = 32, 2 x 7,049,155 calls of one function
#   rtconv/benches/vs_uftrace.sh lua      # the Lua 5.4 interpreter running tests/c/errors.lua
#                                         # (LUA_ROUNDS=400, no longjmp): 3.5 M calls of ~580 functions
#
# fib: the same two-thread recursive fib(N) recorded by uftrace (C, -pg) and by ringtrace (the
# workload sample). lua: the interpreter built at -O2 with -finstrument-functions, recorded by
# `uftrace record` (glibc's no-op hooks taken over) and by ringtrace's stream (libringtrace.a's
# hooks); rtconv runs cold (RTCONV_SYMBOL_INDEX=off: DWARF parsed each time) and warm (from its
# symbol index, as uftrace reads the symbols it saved at record time).
# Needs gcc and uftrace (apt-get install uftrace). Figures: docs/PERFORMANCE.md.
set -euo pipefail
N=${1:-32}
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --locked -q -p rtconv -p samples
if [ "$N" = lua ]; then
  cargo build --release --locked -q --manifest-path recorder/capi/Cargo.toml --target-dir target/capi
  source recorder/benches/lua_build.sh
  build_lua lua-hooked "-finstrument-functions"
  build_lua lua-ringtrace "-finstrument-functions" target/capi/release/libringtrace.a
  export LUA_ROUNDS=${LUA_ROUNDS:-400} LUA_JUMPS=0
  uftrace record --no-libcall --max-stack=65536 -d "$work/data" "$work/lua-hooked" "$PWD/tests/c/errors.lua" >/dev/null
  RINGTRACE_STREAM="$work/big.rtd" "$work/lua-ringtrace" "$PWD/tests/c/errors.lua" >/dev/null
  calls=$(uftrace report -d "$work/data" -f call 2>/dev/null | awk 'NR > 2 { gsub(",", "", $1); s += $1 } END { print s }')
  export RTCONV_SYMBOL_INDEX="$work/index"
  target/release/rtconv stats "$work/big.rtd" >/dev/null   # writes the symbol index (warm runs below)
else
  gcc -O0 -pg -o "$work/fib" rtconv/benches/fib.c -lpthread
  (cd "$work" && uftrace record --no-libcall -d data ./fib "$N" >/dev/null)
  RINGTRACE_RING_RECORDS=16777216 target/release/workload --fib "$N" --out "$work/big.rtd" 2>/dev/null
  calls=$(uftrace report -d "$work/data" -s call 2>/dev/null | awk '$NF == "fib" { print $(NF-1) }' | tr -d ,)
fi
spans=$(target/release/rtconv info "$work/big.rtd" | awk '/spans/ && /threads/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^spans/) print $i; exit }')
keys=$(target/release/rtconv info -f json "$work/big.rtd" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)[0]["keys"].values()))' 2>/dev/null || echo "?")

ROUNDS=${ROUNDS:-7}
row() { # task, uftrace command, -- , rtconv command
  local task=$1
  shift
  python3 rtconv/benches/cpu_ratio.py "$ROUNDS" "$@" | awk -v t="$task" -v c="$calls" -v s="$spans" '{
    printf "| %s | %.3f CPU-s | %.3f CPU-s | %.1f M -> %.1f M | %.1fx |\n", t, $1, $2, c / $1 / 1e6, s / $2 / 1e6, $3 * s / c }'
}

R=target/release/rtconv
echo "uftrace $(uftrace --version | head -1 | awk '{print $2}'): $calls calls; rtconv: $spans spans, $keys distinct keys"
echo "| task | uftrace | rtconv | calls per CPU-second | ratio (median of $ROUNDS rounds) |"
echo "|---|---:|---:|---:|---:|"
UF_CHROME=(uftrace dump --chrome -d "$work/data")
UF_REPLAY=(uftrace replay -d "$work/data")
UF_REPORT=(uftrace report -d "$work/data")
row "Chrome JSON (\`dump --chrome\` / \`convert -f chrome\`)" "${UF_CHROME[@]}" -- $R convert "$work/big.rtd" -f chrome
row "Perfetto (\`dump --chrome\` / \`convert -f perfetto\`)" "${UF_CHROME[@]}" -- $R convert "$work/big.rtd" -f perfetto
row "text trace (\`replay\` / \`convert -f ftrace\`)" "${UF_REPLAY[@]}" -- $R convert "$work/big.rtd" -f ftrace
row "statistics (\`report\` / \`stats\`)" "${UF_REPORT[@]}" -- $R stats "$work/big.rtd"
if [ "$N" = lua ]; then
  echo "cold (RTCONV_SYMBOL_INDEX=off, the Lua binary's DWARF parsed each run):"
  row "Chrome JSON, cold" "${UF_CHROME[@]}" -- env RTCONV_SYMBOL_INDEX=off $R convert "$work/big.rtd" -f chrome
  row "text trace, cold" "${UF_REPLAY[@]}" -- env RTCONV_SYMBOL_INDEX=off $R convert "$work/big.rtd" -f ftrace
  row "statistics, cold" "${UF_REPORT[@]}" -- env RTCONV_SYMBOL_INDEX=off $R stats "$work/big.rtd"
fi
for f in chrome perfetto; do $R convert "$work/big.rtd" -f $f -o "$work/out.$f" 2>/dev/null; done
echo "bytes per span: Chrome JSON $(( $(stat -c %s "$work/out.chrome") / spans )), Perfetto $(( $(stat -c %s "$work/out.perfetto") / spans ))"
echo "peak RSS of rtconv convert -f chrome: $(/usr/bin/time -f %M $R convert "$work/big.rtd" 2>&1 >/dev/null | tail -1) KiB; dump $(stat -c %s "$work/big.rtd") bytes"
