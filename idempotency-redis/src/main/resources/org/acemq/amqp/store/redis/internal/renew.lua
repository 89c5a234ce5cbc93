-- Extends this owner's claim KEYS[1] if it is still the current one (live, or lapsed with nobody having taken over).
-- Record layout: see acquire.lua. ARGV[1] owner, ARGV[2] attempt, ARGV[3] lease ms, ARGV[4] retention ms.
-- Returns 1 if renewed, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = KEYS[1]
local r = redis.call('HMGET', key, 's', 'o', 'a', 'x')
if r[1] == 'c' and tonumber(r[4]) > now and r[2] == ARGV[1] and r[3] == ARGV[2] then
  local deadline = now + tonumber(ARGV[3])
  local forget = deadline + tonumber(ARGV[4])
  redis.call('HSET', key, 'd', deadline, 'x', forget)
  redis.call('PEXPIREAT', key, forget)
  return 1
end
return 0
