# Builds the Lua 5.4.8 interpreter (the lua-src crate's sources) with tests/c/lua_driver.c, at -O2 -g;
# sourced by the whole-program and uftrace benchmarks.
#
#   source recorder/benches/lua_build.sh   # needs $work; sets $lua_src and $sys_libs
#   build_lua OUT EXTRA_CFLAGS LINK...      # writes $work/OUT
registry=$(dirname "$(cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c 'import json,sys; print([p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="lua-src"][0])')")
lua_src="$registry/lua-5.4.8"
sys_libs="-lpthread -ldl -lm -lrt -lgcc_s"

build_lua() { # build_lua OUT EXTRA_CFLAGS LINK...
  local out=$1 flags=$2; shift 2
  mkdir -p "$work/obj-$out"
  for c in "$lua_src"/*.c; do
    case $(basename "$c") in lua.c|luac.c) continue;; esac
    cc -O2 -g -DLUA_USE_LINUX $flags -c "$c" -o "$work/obj-$out/$(basename "$c" .c).o" &
  done
  wait
  cc -O2 -g -I"$lua_src" tests/c/lua_driver.c "$work/obj-$out"/*.o -o "$work/$out" "$@" $sys_libs
}
