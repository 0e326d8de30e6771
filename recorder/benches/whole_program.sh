#!/usr/bin/env bash
# Whole-program tracing against uftrace on real C programs, one run of measurements:
#
#   recorder/benches/whole_program.sh [RUNS]
#
# Programs: the Lua 5.4 interpreter (the lua-src crate's sources) running tests/c/errors.lua
# ($LUA_ROUNDS rounds: recursion, strings, tables, closures, pcall errors, coroutines; first
# LUA_JUMPS=0, without them), and zstd's multi-threaded compression (the zstd-sys crate's sources,
# fetched from crates.io into a scratch project; 2 worker threads) of $ZSTD_MIB MiB of text.
# Each is built at -O2 twice: plain, and with -finstrument-functions (linked with libringtrace.a,
# or with glibc's no-op hooks for uftrace to take over). Variants, RUNS runs each (default 5),
# interleaved, median reported: plain; instrumented with no tracer (glibc's empty hooks);
# ringtrace flight recorder (default 64 Ki-record ring); ringtrace stream (RINGTRACE_STREAM, own
# drain, and RINGTRACE_STREAM_DRAIN=writer); uftrace record. Wall and CPU seconds, peak RSS, bytes
# on disk. Needs uftrace. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-5}
export LUA_ROUNDS=${LUA_ROUNDS:-400}
ZSTD_MIB=${ZSTD_MIB:-2}
work=$(mktemp -d /tmp/ringtrace-whole-XXXXXX)
trap 'rm -rf "$work"' EXIT
command -v uftrace >/dev/null || { echo "uftrace is not installed (apt-get install uftrace)" >&2; exit 1; }

cargo build --release --locked --manifest-path recorder/capi/Cargo.toml --target-dir target/capi >&2
lib=target/capi/release/libringtrace.a
source recorder/benches/lua_build.sh
# zstd's sources: a scratch project that depends on zstd-sys, fetched (not built).
mkdir -p "$work/fetch/src" && echo 'fn main() {}' >"$work/fetch/src/main.rs"
printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nzstd-sys = "=2.1.3"\n' \
  >"$work/fetch/Cargo.toml"
cargo fetch --manifest-path "$work/fetch/Cargo.toml" >&2
zstd_lib=$(ls -d "$(dirname "$registry")"/zstd-sys-2.1.3*/zstd/lib | head -1)

build_lua lua-plain ""
build_lua lua-hooked "-finstrument-functions"                 # glibc's empty hooks; uftrace's when it runs
build_lua lua-ringtrace "-finstrument-functions" "$lib"

build_zstd() { # build_zstd OUT EXTRA_CFLAGS LINK...
  local out=$1 flags=$2; shift 2
  mkdir -p "$work/obj-$out"
  for c in "$zstd_lib"/common/*.c "$zstd_lib"/compress/*.c; do
    cc -O2 -g -DZSTD_MULTITHREAD -pthread $flags -I"$zstd_lib" -c "$c" -o "$work/obj-$out/$(basename "$c" .c).o" &
  done
  wait
  cc -O2 -g -pthread -I"$zstd_lib" tests/c/zstd_driver.c "$work/obj-$out"/*.o -o "$work/$out" "$@" $sys_libs
}
build_zstd zstd-plain ""
build_zstd zstd-hooked "-finstrument-functions"
build_zstd zstd-ringtrace "-finstrument-functions" "$lib"

measure() { # measure NAME ENV... -- COMMAND...: one run; prints "wall cpu rss_kib"
  local name=$1; shift
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  /usr/bin/env "${envs[@]}" /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || {
    cat "$work/stderr" >&2; exit 1; }
  awk '{printf "%s %.3f %s\n", $1, $2 + $3, $4}' "$work/time"
}

run_all() { # run_all PROGRAM-LABEL SCRIPT-ARGS...
  local label=$1; shift
  declare -A wall cpu rss
  local variants=(plain hooked flight stream stream-writer uftrace)
  for ((r = 0; r < RUNS; r++)); do
    for v in "${variants[@]}"; do
      rm -rf "$work/out.rtd" "$work/uftrace.data"
      case $v in
        plain) line=$(measure $v X=1 -- "$work/$label-plain" "$@");;
        hooked) line=$(measure $v X=1 -- "$work/$label-hooked" "$@");;
        flight) line=$(measure $v RINGTRACE_DUMP="$work/out.rtd" -- "$work/$label-ringtrace" "$@");;
        stream) line=$(measure $v RINGTRACE_STREAM="$work/out.rtd" -- "$work/$label-ringtrace" "$@");;
        stream-writer) line=$(measure $v RINGTRACE_STREAM="$work/out.rtd" RINGTRACE_STREAM_DRAIN=writer -- \
          "$work/$label-ringtrace" "$@");;
        # --no-libcall: uftrace 0.13's PLT hooks (its longjmp handling) crash on this program
        # ("plthook_exit: invalid dynsym idx"); without them it records every call but loses the depth
        # after each longjmp (its warning: "call depth beyond 1024 is not recorded").
        uftrace) line=$(measure $v X=1 -- uftrace record --no-libcall --max-stack=65536 -d "$work/uftrace.data" \
          "$work/$label-hooked" "$@");;
      esac
      read -r w c m <<<"$line"
      wall[$v]+="$w "; cpu[$v]+="$c "; rss[$v]+="$m "
      case $v in
        flight|stream|stream-writer) bytes[$v]=$(stat -c %s "$work/out.rtd")
          spans[$v]=$(target/release/rtconv info --format json "$work/out.rtd" 2>/dev/null | python3 -c \
            'import json,sys; d=json.load(sys.stdin)[0]; print(d["spans"], d["losses"]["dropped"]+d["losses"]["overwritten"])');;
        uftrace) bytes[$v]=$(du -sb "$work/uftrace.data" | cut -f1); spans[$v]="";;
      esac
    done
  done
  median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  local base; base=$(echo "${wall[plain]}" | median)
  local hooked; hooked=$(echo "${wall[hooked]}" | median)
  echo
  echo "$label ($*; LUA_ROUNDS=$LUA_ROUNDS LUA_JUMPS=${LUA_JUMPS:-1} for lua), $RUNS runs, medians"
  echo
  echo "| variant | wall s | CPU s | overhead over instrumented (s) | peak RSS MiB | spans kept, lost | bytes on disk |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for v in "${variants[@]}"; do
    local w c m; w=$(echo "${wall[$v]}" | median); c=$(echo "${cpu[$v]}" | median); m=$(echo "${rss[$v]}" | median)
    printf "| %s | %s | %s | %s | %.1f | %s | %s |\n" "$v" "$w" "$c" \
      "$(awk -v a="$w" -v b="$hooked" 'BEGIN {printf "%.3f", a - b}')" "$(awk -v m="$m" 'BEGIN {print m / 1024}')" \
      "${spans[$v]:-}" "${bytes[$v]:-}"
  done
}

declare -A bytes spans
cargo build --release --locked -p rtconv >&2
# Without jumps first: uftrace follows that run whole, so the comparison is fair.
LUA_JUMPS=0 run_all lua "$PWD/tests/c/errors.lua"
LUA_JUMPS=1 run_all lua "$PWD/tests/c/errors.lua"
run_all zstd "$ZSTD_MIB"
