-- Releases each key of KEYS in order, atomically (one script), if this owner's claim is the current one.
-- Record layout: see acquire.lua. ARGV[1] owner, ARGV[2] retention ms, ARGV[2 + i] the attempt of the claim on KEYS[i]
-- ('' for a release by identifier: any attempt of this owner).
-- Returns, per key: 1 if released, else 0. A released key keeps its attempt count for the retention, counted from
-- when it went idle (the release, or the end of a lease that had already lapsed).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]
local retention = tonumber(ARGV[2])
local out = {}
for i, key in ipairs(KEYS) do
  local r = redis.call('HMGET', key, 's', 'o', 'a', 'd', 'x')
  local attempt = ARGV[2 + i]
  if r[1] == 'c' and tonumber(r[5]) > now and r[2] == owner and (attempt == '' or r[3] == attempt) then
    local idle = math.min(now, tonumber(r[4]))
    local forget = idle + retention
    redis.call('HSET', key, 's', 'r', 'x', forget)
    redis.call('PEXPIREAT', key, forget)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
