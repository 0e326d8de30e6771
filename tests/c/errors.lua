-- A workload for the whole-program tracing tests: recursion, strings, tables, closures, and
-- errors raised and caught with pcall (each a _longjmp out of the C frames between the error and
-- its pcall), errors inside errors, and coroutines that yield (also a _longjmp). 40 rounds, or
-- $LUA_ROUNDS (recorder/benches/whole_program.sh runs more); LUA_JUMPS=0 for a run without jumps.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function build(n)
  local t = {}
  for i = 1, n do t[#t + 1] = string.format("%d:%s", i, string.rep("x", i % 7)) end
  table.sort(t, function(a, b) return #a < #b or (#a == #b and a < b) end)
  return table.concat(t, ",")
end

local function counter()
  local n = 0
  return function() n = n + 1; return n end
end

local caught, total = 0, 0
local rounds = tonumber(os.getenv("LUA_ROUNDS")) or 40
-- LUA_JUMPS=0 leaves out the errors and coroutines: a run with no longjmp at all.
local jumps = os.getenv("LUA_JUMPS") ~= "0"
for round = 1, rounds do
  total = total + fib(12) + #build(30)
  local next_id = counter()
  for _ = 1, round % 5 do next_id() end
  if jumps then
    -- error() with a string, a runtime error, an error object, and an error in a nested pcall.
    local ok, err = pcall(error, "plain " .. round)
    if not ok then caught = caught + 1 end
    ok, err = pcall(function() local t = nil; return t.field end)
    if not ok and err:find("index") then caught = caught + 1 end
    ok, err = pcall(function() error({code = round}) end)
    if not ok and err.code == round then caught = caught + 1 end
    ok, err = pcall(function()
      local inner_ok = pcall(function() error("inner") end)
      if inner_ok then return end
      error(string.format("outer %d", next_id()))
    end)
    if not ok then caught = caught + 1 end
    local co = coroutine.wrap(function(a)
      for i = 1, 3 do a = coroutine.yield(a + i) end
      return a
    end)
    total = total + co(1) + co(2) + co(3) + co(4)
  end
end
print(caught, total)
