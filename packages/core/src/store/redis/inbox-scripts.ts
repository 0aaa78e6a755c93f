/**
 * The Lua scripts of the Redis store's inbox: each one call, atomic, on the server's clock (TIME).
 * KEYS are always [pending, running, dead, done, age, ready]: sorted sets of entry keys by when they
 * are due, when their lease ends, when they died, when they are forgotten, (pending ones) when they
 * were recorded, and (ready) the pending entries an ordered take may have now, by when they are due:
 * every pending entry without an order key, and of each order key only its head, the oldest
 * unfinished entry, while it is pending and none of its key runs. An ordered take reads the first
 * of `ready`, so it costs O(log n) however many entries wait behind their email's head (a handler
 * outage leaves every later event of an email pending and blocked); each change of an order key's
 * entries moves its head. ARGV[1] is the base of the other keys: `<base>entry:<key>` (a hash per
 * entry: type, payload, ts, ok (order key), cms (created_at ms), state, att, enq, next, tok, err,
 * ended, fat (failed at), rat (retried at), ratt (attempts before the retries)),
 * `<base>order:<order key>` (its pending and running entries by created_at ms, then key: the first
 * is the oldest), `<base>order-run:<order key>` (its running ones), `<base>head:<order key>` (the
 * entry of it in `ready`, if any) and `<base>tok:<token>` (the entry a take leased with that token,
 * while the lease lasts: a take sent again after its reply was lost returns the same entry instead
 * of taking a second one). Every key shares the base, whose hash tag keeps them in one cluster
 * slot. Bundled into the Redis subpath.
 */
import { NOW, type Script, script } from './scripts.js'

// A running entry's `next` is when its lease ends (its score in running): the reads and the take
// first make every lapsed one pending again, due from then, a thousand at a time.
const COMMON = `${NOW}
local P, R, D, F, A, H = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local base = ARGV[1]
local function E(k) return base .. 'entry:' .. k end
local function O(ok) return base .. 'order:' .. ok end
local function ORUN(ok) return base .. 'order-run:' .. ok end
local function HEAD(ok) return base .. 'head:' .. ok end
local function refresh(ok)
  local hk = HEAD(ok)
  local prev = redis.call('GET', hk)
  if prev then
    redis.call('ZREM', H, prev)
    redis.call('DEL', hk)
  end
  if redis.call('SCARD', ORUN(ok)) > 0 then return end
  local first = redis.call('ZRANGE', O(ok), 0, 0)[1]
  if not first then return end
  local f = redis.call('HMGET', E(first), 'state', 'next')
  if f[1] ~= 'pending' then return end
  redis.call('ZADD', H, f[2], first)
  redis.call('SET', hk, first)
end
local function unrun(k, ok)
  redis.call('ZREM', R, k)
  if ok then redis.call('SREM', ORUN(ok), k) end
end
local function repend(k, e, at)
  redis.call('ZADD', P, at, k)
  redis.call('ZADD', A, redis.call('HGET', e, 'enq'), k)
  local ok = redis.call('HGET', e, 'ok')
  if ok then refresh(ok) else redis.call('ZADD', H, at, k) end
end
local function lapse()
  local gone = redis.call('ZRANGEBYSCORE', R, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
  for i = 1, #gone, 2 do
    local k = gone[i]
    local e = E(k)
    redis.call('HSET', e, 'state', 'pending', 'tok', '')
    unrun(k, redis.call('HGET', e, 'ok'))
    repend(k, e, gone[i + 1])
  end
end
`

// ARGV[2] key, ARGV[3] token: stops unless that token holds the entry with a live lease (`e` its
// hash, `f` its state, token, lease end and order key).
const HOLDS = `local k = ARGV[2]
local e = E(k)
local f = redis.call('HMGET', e, 'state', 'tok', 'next', 'ok')
if ARGV[3] == '' or f[1] ~= 'running' or f[2] ~= ARGV[3] or tonumber(f[3]) <= now then return 0 end
`
// As HOLDS; then it is no longer running (`ok` its order key or false).
const HELD = `${HOLDS}local ok = f[4]
unrun(k, ok)
`

// ARGV key, type, payload, ts, order key ('' none), created_at ms ('' none): 1 queued, 0 duplicate
// (the hash is there in any state; a done one expires with its retention).
const ENQUEUE = `${COMMON}local k = ARGV[2]
local e = E(k)
if redis.call('EXISTS', e) == 1 then return 0 end
redis.call('HSET', e, 'type', ARGV[3], 'payload', ARGV[4], 'ts', ARGV[5], 'state', 'pending', 'att', 0, 'enq', now, 'next', now, 'tok', '')
redis.call('ZREM', F, k)
redis.call('ZADD', P, now, k)
redis.call('ZADD', A, now, k)
if ARGV[6] ~= '' then
  redis.call('HSET', e, 'ok', ARGV[6])
  if ARGV[7] ~= '' then redis.call('HSET', e, 'cms', ARGV[7]) end
  redis.call('ZADD', O(ARGV[6]), tonumber(ARGV[7]) or 0, k)
  refresh(ARGV[6])
else
  redis.call('ZADD', H, now, k)
end
return 1`

// ARGV token, lease ms, ordered ('1'): the due entry with the oldest time, of `pending`, or when
// Builds `ready` from the pending entries: for an inbox written before it existed (0.1.0's, schema version 1).
const BUILD_READY = `  local all = redis.call('ZRANGE', P, 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local ok = redis.call('HGET', E(all[i]), 'ok')
    if ok then refresh(ok) else redis.call('ZADD', H, all[i + 1], all[i]) end
  end
`

// ordered of `ready` (no entry of its order key runs, none older waits): {key, attempt, type,
// payload, ts, order key, created_at ms}, or nil. One look at the first of a sorted set: no walk
// over the entries blocked behind their email's head. A take sent again with the same token (its
// reply lost on a dropped connection, the driver resending it) returns the entry the first one took.
const TAKE = `${COMMON}local function item(k, att)
  local i = redis.call('HMGET', E(k), 'type', 'payload', 'ts', 'ok', 'cms')
  return {k, att, i[1], i[2], i[3], i[4], i[5]}
end
local tk = base .. 'tok:' .. ARGV[2]
local mine = redis.call('GET', tk)
if mine then
  local f = redis.call('HMGET', E(mine), 'state', 'tok', 'att')
  if f[1] == 'running' and f[2] == ARGV[2] then return item(mine, tonumber(f[3])) end
  return false
end
-- An inbox written before 'ready' existed: build it once from the pending entries.
if redis.call('EXISTS', base .. 'v') == 0 then
${BUILD_READY}  redis.call('SET', base .. 'v', '2')
end
lapse()
local lease_end = now + tonumber(ARGV[3])
local from = (ARGV[4] == '1') and H or P
for _ = 1, 100 do
  local due = redis.call('ZRANGE', from, 0, 0, 'WITHSCORES')
  if #due == 0 or tonumber(due[2]) > now then return false end
  local k = due[1]
  local e = E(k)
  local f = redis.call('HMGET', e, 'state', 'ok')
  local ok = f[2]
  if f[1] ~= 'pending' then
    redis.call('ZREM', P, k)
    redis.call('ZREM', A, k)
    redis.call('ZREM', H, k)
  else
    local att = redis.call('HINCRBY', e, 'att', 1)
    redis.call('HSET', e, 'state', 'running', 'tok', ARGV[2], 'next', lease_end)
    redis.call('ZREM', P, k)
    redis.call('ZREM', A, k)
    redis.call('ZREM', H, k)
    redis.call('ZADD', R, lease_end, k)
    if ok then
      redis.call('SADD', ORUN(ok), k)
      refresh(ok)
    end
    redis.call('SET', tk, k, 'PX', tonumber(ARGV[3]))
    return item(k, att)
  end
end
return false`

// ARGV key, token, retention ms: done, the hash expiring with the retention.
const FINISH = `${COMMON}${HELD}local retention = tonumber(ARGV[4])
redis.call('HSET', e, 'state', 'done', 'tok', '', 'ended', now)
if ok then
  redis.call('ZREM', O(ok), k)
  refresh(ok)
end
redis.call('PEXPIRE', e, retention)
redis.call('ZREMRANGEBYSCORE', F, '-inf', now)
redis.call('ZADD', F, now + retention, k)
return 1`

// ARGV key, token, error, retry in ms ('' for dead).
const FAIL = `${COMMON}${HELD}redis.call('HSET', e, 'fat', now)
if ARGV[5] == '' then
  redis.call('HSET', e, 'state', 'dead', 'tok', '', 'err', ARGV[4], 'ended', now)
  if ok then
    redis.call('ZREM', O(ok), k)
    refresh(ok)
  end
  redis.call('ZADD', D, now, k)
else
  local at = now + tonumber(ARGV[5])
  redis.call('HSET', e, 'state', 'pending', 'tok', '', 'err', ARGV[4], 'next', at)
  repend(k, e, at)
end
return 1`

// ARGV key, token, retry in ms: pending again, its attempt given back.
const DEFER = `${COMMON}${HELD}local at = now + tonumber(ARGV[4])
redis.call('HINCRBY', e, 'att', -1)
redis.call('HSET', e, 'state', 'pending', 'tok', '', 'next', at)
repend(k, e, at)
return 1`

// ARGV key, token, lease ms: the lease now ends lease ms from now (a heartbeat).
const RENEW = `${COMMON}${HOLDS}local lease_end = now + tonumber(ARGV[4])
redis.call('HSET', e, 'next', lease_end)
redis.call('ZADD', R, lease_end, k)
return 1`

// ARGV '1' (the first thousand dead entries) or '0' and the keys: how many dead ones are pending now.
const RETRY = `${COMMON}local keys = {}
if ARGV[2] == '1' then keys = redis.call('ZRANGE', D, 0, 999) else for i = 3, #ARGV do keys[#keys + 1] = ARGV[i] end end
local n = 0
for _, k in ipairs(keys) do
  local e = E(k)
  local f = redis.call('HMGET', e, 'state', 'ok', 'cms')
  if f[1] == 'dead' then
    redis.call('HINCRBY', e, 'ratt', tonumber(redis.call('HGET', e, 'att')) or 0)
    redis.call('HSET', e, 'state', 'pending', 'att', 0, 'next', now, 'rat', now)
    redis.call('HDEL', e, 'ended')
    redis.call('ZREM', D, k)
    if f[2] then redis.call('ZADD', O(f[2]), tonumber(f[3] or 0) or 0, k) end
    repend(k, e, now)
    n = n + 1
  end
end
return n`

// ARGV ms: deletes up to a thousand dead entries that ended that long ago; how many.
const PURGE = `${COMMON}local gone = redis.call('ZRANGEBYSCORE', D, '-inf', now - tonumber(ARGV[2]), 'LIMIT', 0, 1000)
for _, k in ipairs(gone) do
  redis.call('DEL', E(k))
  redis.call('ZREM', D, k)
end
return #gone`

// ARGV key: its hash's fields and values (none when it is not there).
const GET = `${COMMON}lapse()
return redis.call('HGETALL', E(ARGV[2]))`

// ARGV state ('' for all), limit: key, fields, key, fields… pending by due time, then running by
// lease end, dead by when they died, done by when they are forgotten.
const LIST = `${COMMON}lapse()
local s, limit = ARGV[2], tonumber(ARGV[3])
local keys = {}
local function add(found)
  for _, k in ipairs(found) do if #keys < limit then keys[#keys + 1] = k end end
end
if s == '' or s == 'pending' then add(redis.call('ZRANGE', P, 0, limit - 1)) end
if s == '' or s == 'running' then add(redis.call('ZRANGE', R, 0, limit - 1)) end
if s == '' or s == 'dead' then add(redis.call('ZRANGE', D, 0, limit - 1)) end
if s == '' or s == 'done' then add(redis.call('ZRANGEBYSCORE', F, '(' .. now, '+inf', 'LIMIT', 0, limit)) end
local out = {}
for _, k in ipairs(keys) do
  local fields = redis.call('HGETALL', E(k))
  if #fields > 0 then
    out[#out + 1] = k
    out[#out + 1] = fields
  end
end
return out`

// {pending, running, dead, the oldest pending entry's enqueue time or nil}.
const STATS = `${COMMON}lapse()
local oldest = redis.call('ZRANGE', A, 0, 0, 'WITHSCORES')
return {redis.call('ZCARD', P), redis.call('ZCARD', R), redis.call('ZCARD', D), oldest[2] or false}`

/**
 * The store's schema version, read and upgraded when the store opens: KEYS the six sets, then
 * `<base>v` (the version; 0.1.0 wrote none) and `<base>v-by` (who wrote it); ARGV[1] the base,
 * ARGV[2] this build's version, ARGV[3] who it is. A newer version is left as it is and answered
 * with its writer, {version, writer}; an older one (or none) is upgraded (version 2: `ready` built
 * from the pending entries) and stamped, {found, false} (0: none). Text that is no version: {-1, text}.
 */
const SCHEMA = `${COMMON}local V, BY = KEYS[7], KEYS[8]
local found = redis.call('GET', V)
local n = 0
if found then
  n = tonumber(found)
  if not n or n < 1 or n % 1 ~= 0 then return {-1, found} end
end
local mine = tonumber(ARGV[2])
if n > mine then return {n, redis.call('GET', BY) or false} end
if n < mine then
  if n < 2 then
${BUILD_READY}  end
  redis.call('SET', V, ARGV[2])
  redis.call('SET', BY, ARGV[3])
end
return {n, false}`

/** The schema script (see SCHEMA). */
export const INBOX_SCHEMA_SCRIPT: Script = script(SCHEMA)

/** The inbox's scripts. */
export const INBOX_SCRIPTS: Record<
  'enqueue' | 'take' | 'finish' | 'fail' | 'defer' | 'renew' | 'retry' | 'purge' | 'get' | 'list' | 'stats',
  Script
> = {
  enqueue: script(ENQUEUE),
  take: script(TAKE),
  finish: script(FINISH),
  fail: script(FAIL),
  defer: script(DEFER),
  renew: script(RENEW),
  retry: script(RETRY),
  purge: script(PURGE),
  get: script(GET),
  list: script(LIST),
  stats: script(STATS),
}
