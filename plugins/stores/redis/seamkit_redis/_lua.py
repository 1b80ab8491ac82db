"""Lua scripts run atomically on the Redis server by :class:`seamkit_redis.store.RedisStore`.

Key layout (``P`` is the store's prefix; run ids and keys go last so every key is unambiguous):

- ``P:kv:<namespace>:<key>``: a StorePort value (codec text in a string, or a list of codec
  texts after ``append``). ``<namespace>`` is :func:`~seamkit._durability.records.scope_namespace`,
  which never contains ``:``.
- ``P:cp:meta:<run>``: hash ``latest`` (version), ``status``, ``parent`` of the latest version.
- ``P:cp:rec:<run>``: hash version -> ``"<log length> <entry count>\\n<header JSON>"``.
- ``P:cp:state:<run>``: hash version -> state (codec text).
- ``P:cp:log:<run>``: list of log entries (codec texts), in version order.
- ``P:cp:wv:<run>``: set of versions that have pending writes; ``P:cp:w:<version>:<run>``: hash
  task id -> payload.
- ``P:cp:runs``: sorted set of run ids, score = ``created_at`` of the latest version;
  ``P:cp:status:<status>`` and ``P:cp:parent:<parent run id>`` likewise for filtered listings.

Scripts build the status/parent/pending-write key names from the prefix (single Redis server or
a replica set; not Redis Cluster).
"""

from __future__ import annotations

__all__ = [
    "KV_SET",
    "KV_PRUNE",
    "APPEND",
    "APPEND_CONVERT",
    "CAS_SET",
    "CP_DELETE",
    "CP_LIST_RUNS",
    "CP_PRUNE_RUN",
    "CP_READ",
    "CP_SAVE",
    "CP_SAVE_MANY",
    "KV_GET",
    "KV_LIST",
]

# KEYS[1] = key. -> {} missing | {'s', text} | {'l', {texts}} | {'x', type}
KV_GET = """
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return {} end
if t == 'string' then return {'s', redis.call('GET', KEYS[1])} end
if t == 'list' then return {'l', redis.call('LRANGE', KEYS[1], 0, -1)} end
return {'x', t}
"""

# KEYS = key, expiry index. ARGV = value, PX milliseconds ('' = no expiry). The expiry index
# (a sorted set: key -> expiry in server-clock ms) lets prune() count the keys that expired.
KV_SET = """
if ARGV[2] == '' then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2]), KEYS[1])
end
return 1
"""

# KEYS[1] = expiry index; ARGV[1] = batch size. Looks at index entries whose expiry has passed:
# a key that is gone expired (counted, dropped from the index); a key that exists without a TTL
# was rewritten without one (dropped, not counted); a key still holding a TTL is left.
# -> {expired, dropped, entries examined}
KV_PRUNE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local expired = 0
local dropped = 0
for _, key in ipairs(due) do
  if redis.call('EXISTS', key) == 0 then
    expired = expired + 1
    redis.call('ZREM', KEYS[1], key)
  elseif redis.call('PTTL', key) == -1 then
    dropped = dropped + 1
    redis.call('ZREM', KEYS[1], key)
  end
end
return {expired, dropped, #due}
"""

# KEYS[1] = key; ARGV = start, stop (LRANGE indices, inclusive).
KV_LIST = """
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return {} end
if t == 'string' then return {'s', redis.call('GET', KEYS[1])} end
if t == 'list' then return {'l', redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])} end
return {'x', t}
"""

# KEYS[1] = key; ARGV[1] = item. -> new length | {'s', text} (a string value: the client decides)
# | {'x', type}. RPUSH keeps the key's TTL.
APPEND = """
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' or t == 'list' then return redis.call('RPUSH', KEYS[1], ARGV[1]) end
if t == 'string' then return {'s', redis.call('GET', KEYS[1])} end
return {'x', t}
"""

# KEYS[1] = key; ARGV[1] = the string value the client read; ARGV[2..] = items of the list it
# decoded plus the new one. Replaces the string with a list (keeping its TTL) when it is still
# ARGV[1]. -> new length, or -1 when the value changed meanwhile.
APPEND_CONVERT = """
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local pttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
local n = 0
for i = 2, #ARGV, 1000 do
  n = redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if pttl > 0 then redis.call('PEXPIRE', KEYS[1], pttl) end
return n
"""

# Compare-and-set for increment. KEYS[1] = key; ARGV = existed ('1'/'0'), expected text, new text.
# -> {1} written (TTL kept) | {0, current text} or {0} changed meanwhile | {-1, type} not a string.
CAS_SET = """
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'string' and t ~= 'none' then return {-1, t} end
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '0' then
  if cur then return {0, cur} end
  redis.call('SET', KEYS[1], ARGV[3])
  return {1}
end
if cur ~= ARGV[2] then
  if cur then return {0, cur} end
  return {0}
end
redis.call('SET', KEYS[1], ARGV[3], 'KEEPTTL')
return {1}
"""

_DELETE_RUN = """
local function delete_run(p, run, meta, rec, log, wv, state, runs)
  local removed = 0
  local st = redis.call('HGET', meta, 'status')
  local parent = redis.call('HGET', meta, 'parent')
  if st then redis.call('ZREM', p .. 'status:' .. st, run) end
  if parent then redis.call('ZREM', p .. 'parent:' .. parent, run) end
  for _, v in ipairs(redis.call('SMEMBERS', wv)) do
    removed = removed + redis.call('DEL', p .. 'w:' .. v .. ':' .. run)
  end
  removed = removed + redis.call('DEL', meta, rec, log, wv, state)
  redis.call('ZREM', runs, run)
  return removed
end
"""

# KEYS = meta, rec, log, state, runs. ARGV = prefix..':cp:', run, expected ('' = none), version,
# status, created_at, parent ('' none, else '=' .. parent), entry count, header JSON, state,
# entries... -> {1} saved | {0, latest ('' = none)} conflict (nothing written).
CP_SAVE = """
local cur = redis.call('HGET', KEYS[1], 'latest')
if not cur then cur = '' end
if cur ~= ARGV[3] then return {0, cur} end
local p = ARGV[1]
local run = ARGV[2]
local k = tonumber(ARGV[8])
local n
if k > 0 then
  for i = 11, #ARGV, 1000 do
    n = redis.call('RPUSH', KEYS[3], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
else
  n = redis.call('LLEN', KEYS[3])
end
redis.call('HSET', KEYS[2], ARGV[4], n .. ' ' .. k .. '\\n' .. ARGV[9])
redis.call('HSET', KEYS[4], ARGV[4], ARGV[10])
local old = redis.call('HMGET', KEYS[1], 'status', 'parent')
if old[1] and old[1] ~= ARGV[5] then redis.call('ZREM', p .. 'status:' .. old[1], run) end
redis.call('ZADD', p .. 'status:' .. ARGV[5], ARGV[6], run)
redis.call('ZADD', KEYS[5], ARGV[6], run)
local parent = false
if ARGV[7] ~= '' then parent = string.sub(ARGV[7], 2) end
if old[2] and old[2] ~= parent then
  redis.call('ZREM', p .. 'parent:' .. old[2], run)
  redis.call('HDEL', KEYS[1], 'parent')
end
-- when saved, on the server's clock in microseconds: list_runs' order among equal created_at
local now = redis.call('TIME')
local touched = now[1] .. string.format('%06d', tonumber(now[2]))
if parent then
  redis.call('ZADD', p .. 'parent:' .. parent, ARGV[6], run)
  redis.call('HSET', KEYS[1], 'latest', ARGV[4], 'status', ARGV[5], 'parent', parent, 'touched', touched)
else
  redis.call('HSET', KEYS[1], 'latest', ARGV[4], 'status', ARGV[5], 'touched', touched)
end
return {1}
"""

# CP_SAVE of several records of one run, then pending writes, in one script (one round trip, atomic).
# KEYS = meta, rec, log, state, runs, wv. ARGV = the record count, then per record the length of
# its CP_SAVE ARGV and that ARGV, then per pending write: its hash key, version, task id, payload.
# -> {1} saved | {0, latest ('' = none)} when the first record conflicts (nothing written; a later
# record expects the version the one before it stored, so it cannot conflict).
CP_SAVE_MANY = (
    "local function save_one(ARGV)\n"
    + CP_SAVE
    + """end
local i = 2
for _ = 1, tonumber(ARGV[1]) do
  local len = tonumber(ARGV[i])
  local res = save_one({unpack(ARGV, i + 1, i + len)})
  if res[1] ~= 1 then return res end
  i = i + 1 + len
end
while i <= #ARGV do
  redis.call('HSET', ARGV[i], ARGV[i + 2], ARGV[i + 3])
  redis.call('SADD', KEYS[6], ARGV[i + 1])
  i = i + 4
end
return {1}
"""
)

# KEYS = meta, rec, log, state. ARGV[1] = version ('' = latest).
# -> {} missing | {version, rec value, state, {log entries up to that version}}
CP_READ = """
local v = ARGV[1]
if v == '' then
  v = redis.call('HGET', KEYS[1], 'latest')
  if not v then return {} end
end
local r = redis.call('HGET', KEYS[2], v)
if not r then return {} end
local sp = string.find(r, ' ', 1, true)
local n = tonumber(string.sub(r, 1, sp - 1))
local log = {}
if n > 0 then log = redis.call('LRANGE', KEYS[3], 0, n - 1) end
return {v, r, redis.call('HGET', KEYS[4], v), log}
"""

# KEYS[1] = index sorted set. ARGV = prefix..':cp:', limit, status filter ('' = any).
# -> flat {run, version, rec value, touched, ...}, newest created_at first: at least `limit` runs
# (when there are), and every run whose created_at equals the last one's, so that the caller can
# order ties by `touched` (the later save first) before it cuts to `limit`.
CP_LIST_RUNS = """
local p = ARGV[1]
local limit = tonumber(ARGV[2])
local out = {}
local count = 0
local start = 0
local last = nil
local done = false
while not done do
  local page = redis.call('ZREVRANGE', KEYS[1], start, start + 255, 'WITHSCORES')
  if #page == 0 then break end
  for i = 1, #page, 2 do
    local run, score = page[i], page[i + 1]
    if count >= limit and score ~= last then
      done = true
      break
    end
    local meta = redis.call('HMGET', p .. 'meta:' .. run, 'latest', 'status', 'touched')
    if meta[1] and (ARGV[3] == '' or meta[2] == ARGV[3]) then
      local r = redis.call('HGET', p .. 'rec:' .. run, meta[1])
      if r then
        out[#out + 1] = run
        out[#out + 1] = meta[1]
        out[#out + 1] = r
        out[#out + 1] = meta[3] or '0'
        count = count + 1
        last = score
      end
    end
  end
  start = start + 256
end
return out
"""

# KEYS = meta, rec, log, wv, state, runs. ARGV = prefix..':cp:', run. -> keys deleted.
CP_DELETE = _DELETE_RUN + """
return delete_run(ARGV[1], ARGV[2], KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
"""

# KEYS = meta, rec, log, wv, state, runs. ARGV = prefix..':cp:', run, keep_last,
# finished_before ('' = none). -> versions deleted.
CP_PRUNE_RUN = _DELETE_RUN + """
local p = ARGV[1]
local run = ARGV[2]
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return 0 end
if ARGV[4] ~= '' and (st == 'done' or st == 'failed') then
  local score = redis.call('ZSCORE', KEYS[6], run)
  if score and tonumber(score) < tonumber(ARGV[4]) then
    local n = redis.call('HLEN', KEYS[2])
    delete_run(p, run, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
    return n
  end
end
local keep = tonumber(ARGV[3])
local vs = redis.call('HKEYS', KEYS[2])
if #vs <= keep then return 0 end
table.sort(vs, function(a, b) return tonumber(a) < tonumber(b) end)
local cut = #vs - keep
for i = 1, cut do
  redis.call('HDEL', KEYS[2], vs[i])
  redis.call('HDEL', KEYS[5], vs[i])
end
local oldest = tonumber(vs[cut + 1])
for _, v in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  if tonumber(v) < oldest then
    redis.call('DEL', p .. 'w:' .. v .. ':' .. run)
    redis.call('SREM', KEYS[4], v)
  end
end
return cut
"""
