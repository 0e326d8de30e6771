"""gdb script: counts the instructions one call of the sample's `leaf` executes, from
its first instruction to the return into its caller, by single-stepping the
firmware on QEMU's gdb stub. Run by measure.sh, which sets: PORT (the stub),
LEAF (leaf's address, hex), RET (the return-address register: lr or ra),
MASK (a gdb command masking interrupts while stepping, or empty), DISABLE
(the address of the recorder's ENABLED flag, hex, to count a span switched
off at run time; or empty)."""
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
    gdb.selected_inferior().write_memory(int(os.environ["DISABLE"], 16), b"\x00")
if os.environ.get("MASK"):
    gdb.execute(os.environ["MASK"])
ret = int(gdb.parse_and_eval("$" + os.environ.get("RET", "lr"))) & ~1
n = 0
while (int(gdb.parse_and_eval("$pc")) & ~1) != ret:
    gdb.execute("stepi", to_string=True)
    n += 1
print("COUNT", n)
gdb.execute("kill")
