"""gdb script: counts the instructions one call of the sample's `leaf` executes, from
its first instruction to the return into its caller, by single-stepping the
firmware on QEMU's gdb stub. Run by measure.sh, which sets: PORT (the stub),
LEAF (leaf's address, hex), RET (the return-address register: lr or ra),
MASK (a gdb command masking interrupts while stepping, or empty), DISABLE
(to count a span switched off at run time: the addresses, hex, of the
recorder's ENABLED flag and SINK pointer, which gdb clears as
`set_enabled(false)` does; or empty)."""
import gdb, os, time
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set language c")
# QEMU opens its gdb port as it starts: try for a few seconds.
for attempt in range(100):
    try:
        gdb.execute("target remote :%s" % os.environ["PORT"])
        break
    except gdb.error:
        time.sleep(0.05)
leaf = int(os.environ['LEAF'], 16) & ~1
gdb.execute("break *%d" % leaf)
gdb.execute("continue", to_string=True)
if os.environ.get("DISABLE"):
    flag, *sink = (int(a, 16) for a in os.environ["DISABLE"].split())
    gdb.selected_inferior().write_memory(flag, b"\x00")
    for address in sink:  # none before the recorder had one
        gdb.selected_inferior().write_memory(address, b"\x00" * int(gdb.parse_and_eval("sizeof(void *)")))
if os.environ.get("MASK"):
    gdb.execute(os.environ["MASK"])
ret = int(gdb.parse_and_eval("$" + os.environ.get("RET", "lr"))) & ~1
n = 0
while (int(gdb.parse_and_eval("$pc")) & ~1) != ret:
    gdb.execute("stepi", to_string=True)
    n += 1
print("COUNT", n)
gdb.execute("kill")
