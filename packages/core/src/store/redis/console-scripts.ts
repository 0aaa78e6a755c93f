/**
 * The Lua scripts of the console's reads of a Redis store: read-only (no lapse, no write), each one
 * call on the server's clock. The inbox ones get the inbox's sorted sets as KEYS (pending, running,
 * dead, done, age: one cluster slot, as the inbox's own scripts) and the base of its other keys as
 * ARGV[1]; a walk over a set reads at most ARGV budget entries and says whether it stopped early.
 * Entry fields returned: type, state, att, enq, next, ended, err, ok (order key), cms (created_at ms).
 */
import { NOW, type Script, script } from './scripts.js'

const FIELDS = `local FIELDS = {'type', 'state', 'att', 'enq', 'next', 'ended', 'err', 'ok', 'cms'}
local function E(k) return base .. 'entry:' .. k end
local function fields(k) return redis.call('HMGET', E(k), unpack(FIELDS)) end
`

// KEYS[1] a dedup key: {done, expires at, attempt, has token (1|0), now} or false.
const RECORD = `${NOW}
local cur = redis.call('GET', KEYS[1])
if not cur then return false end
local done, exp, att, tok = string.match(cur, '^(%d):(%d+):(%d+):(.*)$')
if not done then return false end
return {done, exp, att, tok ~= '' and 1 or 0, tostring(now)}`

// KEYS[1] an email's mark (hash ms, id, type), KEYS[2] its facts (hash '<type>|<ms>#h' / '#r'):
// {ms, id, type, mark ttl ms, facts as field, value…, facts ttl ms, now}.
const EMAIL_MARKS = `${NOW}
local m = redis.call('HMGET', KEYS[1], 'ms', 'id', 'type')
return {m[1] or false, m[2] or false, m[3] or false, redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('PTTL', KEYS[2]), tostring(now)}`

// ARGV base, order key, limit, budget: the email's unfinished entries (its order set), then its done
// and dead ones found by walking those sets newest first (at most budget entries).
// {now, walked all (1|0), key, fields, key, fields…}
const EMAIL_ENTRIES = `${NOW}
local base, ok, limit, budget = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
${FIELDS}local out = {tostring(now), 1}
local found = 0
local function add(k, f)
  if found < limit then
    out[#out + 1] = k
    out[#out + 1] = f
    found = found + 1
  end
end
for _, k in ipairs(redis.call('ZRANGE', base .. 'order:' .. ok, 0, limit - 1)) do add(k, fields(k)) end
local seen = 0
for _, set in ipairs({KEYS[3], KEYS[4]}) do
  local offset = 0
  while found < limit do
    local page = redis.call('ZREVRANGE', set, offset, offset + 199)
    if #page == 0 then break end
    for _, k in ipairs(page) do
      seen = seen + 1
      if seen > budget then out[2] = 0 break end
      if redis.call('HGET', E(k), 'ok') == ok then add(k, fields(k)) end
    end
    if seen > budget then break end
    offset = offset + 200
  end
end
return out`

// ARGV base, set index (1-5), time field ('enq' | 'ended'), type ('' any), before ms ('' none),
// cursor score ('' none), cursor key, limit, budget, score is the time ('1' | '0'), lapsed ('pending' | 'running' | '').
// Newest first by the set's score: {now, more (1|0), examined all (1|0), score, key, fields, …}.
const ENTRIES = `${NOW}
local base = ARGV[1]
local set = KEYS[tonumber(ARGV[2])]
local tfield, typ, before, cscore, ckey = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local limit, budget, scoreIsTime = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10] == '1'
${FIELDS}-- Byte order, as the sorted set orders ties (Lua's string comparison follows the server's locale).
local function geq(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a >= #b
end
local max = '+inf'
if cscore ~= '' then max = cscore end
if scoreIsTime and before ~= '' and (cscore == '' or tonumber(before) < tonumber(cscore)) then max = before end
local out = {tostring(now), 0, 1}
local found, seen, offset = 0, 0, 0
while true do
  local page = redis.call('ZREVRANGEBYSCORE', set, max, '-inf', 'WITHSCORES', 'LIMIT', offset, 200)
  if #page == 0 then return out end
  for i = 1, #page, 2 do
    local k, s = page[i], page[i + 1]
    if not (cscore ~= '' and tonumber(s) == tonumber(cscore) and geq(k, ckey)) then
      seen = seen + 1
      local f = fields(k)
      local ok = f[1] ~= false and (typ == '' or f[1] == typ)
      if ok and before ~= '' then ok = tonumber(f[tfield == 'enq' and 4 or 6] or 0) <= tonumber(before) end
      if ok then
        if found == limit then out[2] = 1 return out end
        out[#out + 1] = s
        out[#out + 1] = k
        out[#out + 1] = f
        found = found + 1
      end
      if seen >= budget then
        out[3] = 0
        out[#out + 1] = s
        out[#out + 1] = k
        out[#out + 1] = false
        return out
      end
    end
  end
  offset = offset + 200
end`

// ARGV base, type ('' any), before ms ('' none), budget: {count, exact (1|0)}.
const COUNT_DEAD = `local base, typ, before, budget = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local max = before == '' and '+inf' or before
if typ == '' then return {redis.call('ZCOUNT', KEYS[3], '-inf', max), 1} end
local function E(k) return base .. 'entry:' .. k end
local n, seen, offset = 0, 0, 0
while true do
  local page = redis.call('ZREVRANGEBYSCORE', KEYS[3], max, '-inf', 'LIMIT', offset, 500)
  if #page == 0 then return {n, 1} end
  for _, k in ipairs(page) do
    seen = seen + 1
    if redis.call('HGET', E(k), 'type') == typ then n = n + 1 end
    if seen >= budget then return {n, 0} end
  end
  offset = offset + 500
end`

// KEYS the inbox's sets: {keys in the database, pending, running, dead, done remembered}.
const OVERVIEW = `return {redis.call('DBSIZE'), redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]), redis.call('ZCARD', KEYS[4])}`

/** The console's scripts. */
export const CONSOLE_SCRIPTS: Record<'record' | 'emailMarks' | 'emailEntries' | 'entries' | 'countDead' | 'overview', Script> = {
  record: script(RECORD),
  emailMarks: script(EMAIL_MARKS),
  emailEntries: script(EMAIL_ENTRIES),
  entries: script(ENTRIES),
  countDead: script(COUNT_DEAD),
  overview: script(OVERVIEW),
}
