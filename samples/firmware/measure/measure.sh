#!/usr/bin/env bash
# Builds each firmware sample four ways — the recorder as shipped (single-core, small-crc), with
# its barriers (--no-default-features), compiled out (--features off), and streaming its spans
# (--features stream: stop-when-full rings) — and prints, per
# build: flash and RAM (`size`), the bytes of each instrumented function, and the instructions
# one call of `leaf` executes on QEMU (counted by gdb, single-stepping; recording on, and also
# switched off at run time), beside `pair`, the same work between two bare counter reads.
# Cortex-M3 (mps2-an385) and Cortex-M0 (microbit) on qemu-system-arm, rv32imac on qemu-system-riscv32.
# Needs those and gdb-multiarch.
#
#   samples/firmware/measure/measure.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=samples/firmware/measure
for fw in "fw-cortex-m thumbv7m-none-eabi qemu-system-arm lr -M mps2-an385 -cpu cortex-m3" \
          "fw-cortex-m thumbv6m-none-eabi qemu-system-arm lr -M microbit" \
          "fw-riscv riscv32imac-unknown-none-elf qemu-system-riscv32 ra -M virt -bios none"; do
  set -- $fw
  package=$1 target=$2 qemu=$3 ret=$4; shift 4; machine=("$@")
  mask=""; [ "$ret" = ra ] && mask='set $mstatus = $mstatus & ~8'
  module=${package//-/_}
  for build in "shipped:" "barriers:--no-default-features" "off:--features off" "stream:--features stream"; do
    name=${build%%:*} flags=${build#*:}
    dir=target/fwcmp/$name
    # shellcheck disable=SC2086
    cargo build -q --release --locked -p "$package" --target "$target" --manifest-path samples/firmware/Cargo.toml --target-dir "$dir" $flags
    elf=$dir/$target/release/$package
    echo "== $package $target, $name: $(size "$elf" | tail -1 | awk '{print "text " $1 ", data " $2 ", bss " $3}')"
    nm -S -C -t d "$elf" | awk -v m="$module" '$4 ~ "^" m "::(fib|leaf|middle|irq_work)$" || $4 ~ /drop_in_place<ringtrace::span::Span/ || $4 == "ringtrace::span::end" {printf "   %5d bytes  %s\n", $2, $4}'
    leaf=$(nm -C "$elf" | awk -v m="$module" '$3 == m "::leaf" {print $1}')
    pair=$(nm -C "$elf" | awk -v m="$module" '$3 == m "::pair" {print $1}')
    enabled=$(nm "$elf" | awk '/7ENABLED17h/ {print $1}')
    sink=$(nm "$elf" | awk '/4SINK17h/ {print $1}')
    for mode in on switched-off pair; do
      [ "$name" = off ] && [ "$mode" != on ] && continue
      [ "$name" = barriers ] && [ "$mode" = pair ] && continue
      disable=""; [ "$mode" = switched-off ] && disable="0x$enabled${sink:+ 0x$sink}"
      function=$leaf; [ "$mode" = pair ] && function=$pair
      port=$((20000 + RANDOM % 20000))
      "$qemu" "${machine[@]}" -nographic -monitor none -serial none -semihosting-config enable=on,target=native \
        -icount shift=5 -kernel "$elf" -gdb "tcp::$port" -S >/dev/null 2>&1 &
      pid=$!
      count=$(PORT=$port LEAF=$function RET=$ret MASK=$mask DISABLE=$disable \
        gdb-multiarch -q -batch -x "$here/span-instructions.py" "$elf" 2>/dev/null | awk '/^COUNT/ {print $2}')
      kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
      case $mode in
        pair) echo "   pair (the bare counter pair around leaf's work) executes $count instructions" ;;
        *) echo "   leaf executes $count instructions (recording $mode)" ;;
      esac
    done
  done
done
