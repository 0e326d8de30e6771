/* The Lua interpreter made to die deep in its own call chain, for the core-file tests
 * (tests/tests/core_files.rs): `lua_crash SCRIPT abort PATH` runs SCRIPT, whose recursion ends in
 * the C function `crash`, which calls abort(); `lua_crash SCRIPT write PATH` runs it the same way
 * and, where the first aborts, writes a ringtrace dump to PATH and exits instead.
 *
 * Lua seeds its string hashes with time() and the addresses of a heap block, a local variable and
 * a function. time() is fixed here (the program's own definition wins over the C library's), and
 * the two modes' arguments are as long as each other, so with address-space randomisation off
 * (setarch -R) and the same environment both runs make every call the same. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"
#include "ringtrace.h"

time_t time(time_t *t) {
    if (t) *t = 1;
    return 1;
}

static const char *dump_path;

static int crash(lua_State *L) {
    (void)L;
    if (dump_path) {
        _exit(ringtrace_dump_to_path(dump_path) == 0 ? 0 : 3);
    }
    abort();
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    if (strcmp(argv[2], "write") == 0) dump_path = argv[3];
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_register(L, "crash", crash);
    if (luaL_dofile(L, argv[1]) != LUA_OK) return 1;
    return 0;
}
