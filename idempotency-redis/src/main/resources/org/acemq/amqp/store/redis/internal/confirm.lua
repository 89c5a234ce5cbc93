-- Confirms each key of KEYS in order, atomically (one script). Record layout: see acquire.lua.
-- ARGV[1] owner ('' for a confirmation by identifier), ARGV[2] retention ms, ARGV[2 + i] the attempt of the claim on
-- KEYS[i] (0 for a confirmation by identifier).
-- Returns, per key: 1 if the claim still held a live lease, else 0. Completion is recorded in every case; a key that
-- is already confirmed is left as it is.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]
local retention = tonumber(ARGV[2])
local out = {}
for i, key in ipairs(KEYS) do
  local r = redis.call('HMGET', key, 's', 'o', 'a', 'd', 'x')
  local forget = now + retention
  if r[1] and tonumber(r[5]) > now then
    if r[1] == 'd' then
      out[i] = 0
    else
      local live = r[1] == 'c' and r[2] == owner and r[3] == ARGV[2 + i] and tonumber(r[4]) > now
      out[i] = live and 1 or 0
      redis.call('HSET', key, 's', 'd', 'x', forget)
      redis.call('PEXPIREAT', key, forget)
    end
  else
    redis.call('DEL', key)
    redis.call('HSET', key, 's', 'd', 'o', '', 'a', 0, 'd', 0, 'x', forget, 'f', '')
    redis.call('PEXPIREAT', key, forget)
    out[i] = 0
  end
end
return out
