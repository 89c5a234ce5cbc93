-- Reads KEYS[1]: returns {state, attempt} with state 0 unknown (or forgotten), 1 claimed, 2 confirmed, 3 released.
-- Record layout: see acquire.lua.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 's', 'a', 'x')
if not r[1] or tonumber(r[3]) <= now then
  return {0, 0}
end
local states = {c = 1, d = 2, r = 3}
return {states[r[1]], tonumber(r[2])}
