-- A whole-program trace of interpreter work (tests/tests/external_tools/budget.rs): tables, strings, closures, sorting.
local n = 3000
local t = {}
for i = 1, n do
  t[#t + 1] = string.format("%d:%s", i, tostring(i * i))
end
table.sort(t, function(a, b) return #a < #b or (#a == #b and a < b) end)
local s = 0
for _, v in ipairs(t) do s = s + #v end
print(s)
