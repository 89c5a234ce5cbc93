-- Writes records moved from the first key layout (LayoutMigration): each KEYS[i] gets the moved record's fields and
-- its expiry, unless a record is there already (one written in this layout is newer and wins) or the moved record is
-- past its forget time. Record layout: see acquire.lua.
-- ARGV[6 * (i - 1) + 1 .. 6 * i]: the fields s, o, a, d, x, f of the record moved to KEYS[i].
-- Returns, per key: 1 if written, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local at = 6 * (i - 1)
  local forget = tonumber(ARGV[at + 5])
  if forget and forget > now and redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 's', ARGV[at + 1], 'o', ARGV[at + 2], 'a', ARGV[at + 3], 'd', ARGV[at + 4],
        'x', ARGV[at + 5], 'f', ARGV[at + 6])
    redis.call('PEXPIREAT', key, forget)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
