-- Claims each key of KEYS in order, atomically (one script). A record is a hash:
--   s = 'c' claimed, 'r' released, 'd' done (confirmed); o = owner; a = attempt; d = lease end (ms);
--   x = when the record is forgotten (ms); f = fingerprint ('' for none).
-- ARGV[1] owner, ARGV[2] lease ms, ARGV[3] retention ms, ARGV[3 + i] the fingerprint for KEYS[i] ('' for none).
-- Returns, per key: result (1 claimed, 2 already confirmed, 3 in progress), attempt, fingerprint ('' for none).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]
local lease = tonumber(ARGV[2])
local retention = tonumber(ARGV[3])
local out = {}
for i, key in ipairs(KEYS) do
  local r = redis.call('HMGET', key, 's', 'a', 'd', 'x', 'f')
  local attempt = 0
  local held = nil
  if r[1] and tonumber(r[4]) > now then
    if r[1] == 'd' then
      held = 2
    elseif r[1] == 'c' and tonumber(r[3]) > now then
      held = 3
    else
      attempt = tonumber(r[2])
    end
  end
  if held then
    out[#out + 1] = held
    out[#out + 1] = tonumber(r[2])
    out[#out + 1] = r[5] or ''
  else
    if attempt < 2147483647 then
      attempt = attempt + 1
    end
    local fingerprint = ARGV[3 + i]
    local deadline = now + lease
    local forget = deadline + retention
    redis.call('HSET', key, 's', 'c', 'o', owner, 'a', attempt, 'd', deadline, 'x', forget, 'f', fingerprint)
    redis.call('PEXPIREAT', key, forget)
    out[#out + 1] = 1
    out[#out + 1] = attempt
    out[#out + 1] = fingerprint
  end
end
return out
