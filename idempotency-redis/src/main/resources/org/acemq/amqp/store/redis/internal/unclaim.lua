-- Takes back claims this owner made and will not use: a batch that failed in some slots gives back what the other
-- slots claimed. A claim taken back is not an attempt (nothing ran under it), so each key whose current claim is this
-- owner's, with the given attempt and a live lease, gets its attempt count back one lower and becomes idle (released);
-- a key that claim had created (attempt 1) is deleted, as if never claimed. Record layout: see acquire.lua.
-- ARGV[1] owner, ARGV[2] retention ms, ARGV[2 + i] the attempt of the claim on KEYS[i].
-- Returns, per key: 1 if taken back, else 0 (the claim was no longer this one: nothing changed).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]
local retention = tonumber(ARGV[2])
local out = {}
for i, key in ipairs(KEYS) do
  local r = redis.call('HMGET', key, 's', 'o', 'a', 'd', 'x')
  local attempt = ARGV[2 + i]
  if r[1] == 'c' and tonumber(r[4]) > now and r[2] == owner and r[3] == attempt then
    local before = tonumber(attempt) - 1
    if before < 1 then
      redis.call('DEL', key)
    else
      local forget = now + retention
      redis.call('HSET', key, 's', 'r', 'a', before, 'x', forget)
      redis.call('PEXPIREAT', key, forget)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
