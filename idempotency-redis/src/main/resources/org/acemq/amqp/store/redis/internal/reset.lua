-- Forgets KEYS[1] if it is neither confirmed nor held by a live claim. Record layout: see acquire.lua.
-- Returns 1 if a count was reset, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = KEYS[1]
local r = redis.call('HMGET', key, 's', 'd', 'x')
if not r[1] or tonumber(r[3]) <= now then
  return 0
end
if r[1] == 'd' or (r[1] == 'c' and tonumber(r[2]) > now) then
  return 0
end
redis.call('DEL', key)
return 1
