-- Work enough to wrap a small ring, then a recursion whose innermost call is the C function `crash`
-- (tests/c/lua_crash.c). Deterministic: no clock, no randomness.
local words = {}
for i = 1, 3000 do
  words[#words + 1] = string.format("w%05d", (i * 7919) % 3001)
end
table.sort(words)
local function down(n)
  if n == 0 then
    crash()
    return 0
  end
  return 1 + down(n - 1)
end
print(#words, down(5))
