/**
 * The Lua scripts of `RedisDedupStore`: each one reads and writes one key atomically, on the
 * server's clock (`TIME`); the ordering variants of claim, complete and release also read or
 * advance the mark key (a hash: ms, id, type; expiring with the retention) and take or free the
 * order key's lock in the same script. Bundled into the Redis subpath.
 */
import { createHash } from 'node:crypto'

/** Lua: `now`, the server's clock in ms (TIME). */
export const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

// Values: "<done 0|1>:<expires at, server ms>:<attempt>:<token>". The key itself outlives a
// lease by the retention, so a re-claim after a lapsed lease or a release knows the attempt
// number; a done key expires with its retention and is then forgotten (attempt 1 again).

// Claim: KEYS[1] the dedup key; ARGV token, lease ms, retention ms. Answers {0, 0} duplicate,
// {1, ms left} in flight, {2, attempt} acquired. The ordered claim adds KEYS[2] the mark (a hash:
// ms, id, type), KEYS[3] the order key's lock (the holder's token, expiring with its lease) and
// KEYS[4] the email's facts (a hash: '<fact>#h' handled, '<fact>#r' reconciled), ARGV[4] the fact
// ('' for none): {3, ms left} while another claim holds the lock, else the lease and the lock,
// the mark and the fact's counts.
// A live lease of this same token is the caller's own: the claim was sent again after its reply
// was lost (a dropped connection, the driver resending it), so it answers acquired once more with
// the same attempt (`own`), not in flight to itself for a whole lease.
const CLAIM_CHECK = `${NOW}
local lease = tonumber(ARGV[2])
local attempt = 1
local own = false
local cur = redis.call('GET', KEYS[1])
if cur then
  local done, exp, att, tok = string.match(cur, '^(%d):(%d+):(%d+):(.*)$')
  exp = tonumber(exp)
  if exp > now then
    if done == '1' then return {0, 0} end
    if tok ~= ARGV[1] then return {1, exp - now} end
    own = true
    attempt = tonumber(att)
  elseif done == '0' then attempt = tonumber(att) + 1 end
end
`
// A lease (and an order key's lock) is written for this server only: not to the AOF, not to
// replicas. It need not survive a restart or a failover (a complete then records a key nobody
// holds, see COMPLETE_DONE; a retry that claimed first runs the event again, as at-least-once
// allows), and with `appendfsync always` a propagated lease was a second AOF write per event and
// more fsyncs. Everything a 2xx relies on (the done record, the mark, the facts) is propagated as
// before. A server without `redis.set_repl` propagates the lease as it always did.
const LOCAL_ONLY = `if redis.set_repl then pcall(redis.set_repl, redis.REPL_NONE) end
`
const TAKE_LEASE = `${LOCAL_ONLY}redis.call('SET', KEYS[1], '0:' .. (now + lease) .. ':' .. attempt .. ':' .. ARGV[1], 'PX', lease + tonumber(ARGV[3]))
`
const CLAIM_SCRIPT = `${CLAIM_CHECK}if not own then ${TAKE_LEASE}end
return {2, attempt}`
const CLAIM_ORDER_SCRIPT = `${CLAIM_CHECK}if not own then
local held = redis.call('PTTL', KEYS[3])
if held > 0 then return {3, held} end
${TAKE_LEASE}redis.call('SET', KEYS[3], ARGV[1], 'PX', lease)
end
local m = redis.call('HMGET', KEYS[2], 'ms', 'id', 'type')
local f = {false, false}
if ARGV[4] ~= '' then f = redis.call('HMGET', KEYS[4], ARGV[4] .. '#h', ARGV[4] .. '#r') end
return {2, attempt, m[1], m[2], m[3], f[1], f[2]}`

// Complete: KEYS[1]; ARGV token, retention ms. The ordered complete adds KEYS[2] the mark,
// advanced when ARGV[3..5] (created_at ms, event id, type) is newer, KEYS[3] the lock, freed, and
// KEYS[4] the facts, where ARGV[6] (the fact, '' for none) gets ARGV[7] handled and ARGV[8] reconciled more.
// No key at all: the lease went with a restart (leases are not in the AOF) and nobody claimed the
// event since, so the handler that ran is the only run: recorded (attempt unknown, 1).
const COMPLETE_DONE = `if ARGV[1] == '' then return 0 end
local cur = redis.call('GET', KEYS[1])
local att = '1'
if cur then
  local done, a, tok = string.match(cur, '^(%d):%d+:(%d+):(.*)$')
  if done ~= '0' or tok ~= ARGV[1] then return 0 end
  att = a
end
${NOW}
local retention = tonumber(ARGV[2])
redis.call('SET', KEYS[1], '1:' .. (now + retention) .. ':' .. att .. ':', 'PX', retention)
`
// Ids compare byte by byte: Lua's `<` on strings follows the server's locale (strcoll).
const NEWER = `local function newer(ms, id, cur_ms, cur_id)
  if not cur_ms or not cur_id then return true end
  local a, b = tonumber(ms), tonumber(cur_ms)
  if a ~= b then return a > b end
  for i = 1, math.min(#id, #cur_id) do
    local x, y = string.byte(id, i), string.byte(cur_id, i)
    if x ~= y then return x > y end
  end
  return #id > #cur_id
end
`
const ADVANCE_MARK = `local m = redis.call('HMGET', KEYS[2], 'ms', 'id')
if newer(ARGV[3], ARGV[4], m[1], m[2]) then redis.call('HSET', KEYS[2], 'ms', ARGV[3], 'id', ARGV[4], 'type', ARGV[5]) end
redis.call('PEXPIRE', KEYS[2], retention)
`
// Reconciled never goes below 0; the facts of an email expire together, with the retention.
const COUNT_FACT = `if ARGV[6] ~= '' then
  redis.call('HINCRBY', KEYS[4], ARGV[6] .. '#h', ARGV[7])
  if redis.call('HINCRBY', KEYS[4], ARGV[6] .. '#r', ARGV[8]) < 0 then redis.call('HSET', KEYS[4], ARGV[6] .. '#r', 0) end
  redis.call('PEXPIRE', KEYS[4], retention)
end
`
/** Frees the lock key `KEYS[i]` if the token ARGV[1] holds it. */
const unlock = (i: number) => `if redis.call('GET', KEYS[${i}]) == ARGV[1] then redis.call('DEL', KEYS[${i}]) end
`
const COMPLETE_SCRIPT = `${COMPLETE_DONE}return 1`
const COMPLETE_ORDER_SCRIPT = `${NEWER}${COMPLETE_DONE}${ADVANCE_MARK}${COUNT_FACT}${unlock(3)}return 1`

// Release: KEYS[1]; ARGV token. The ordered release adds KEYS[2] the lock, freed if this token
// holds it (a claim that took the key over holds it with its own token). Local only, like the
// lease it gives up (a released lease replayed from the AOF, KEEPTTL, would never expire).
const RELEASE_LEASE = `local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local done, att, tok = string.match(cur, '^(%d):%d+:(%d+):(.*)$')
if done ~= '0' or tok ~= ARGV[1] then return 0 end
${LOCAL_ONLY}redis.call('SET', KEYS[1], '0:0:' .. att .. ':', 'KEEPTTL')
return 1`
const RELEASE_SCRIPT = `if ARGV[1] == '' then return 0 end
${RELEASE_LEASE}`
const RELEASE_ORDER_SCRIPT = `if ARGV[1] == '' then return 0 end
${unlock(2)}${RELEASE_LEASE}`

// Extend: KEYS[1]; ARGV token, lease ms. A live lease of the token now ends lease ms from now; the
// key keeps the retention it had beyond its lease (for the attempt count). The ordered extend adds
// KEYS[2] the lock, renewed if this token holds it. Local only, like the lease it renews.
const EXTEND_LEASE = `local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local done, exp, att, tok = string.match(cur, '^(%d):(%d+):(%d+):(.*)$')
${NOW}
exp = tonumber(exp)
if done ~= '0' or tok ~= ARGV[1] or exp <= now then return 0 end
local lease = tonumber(ARGV[2])
local rest = redis.call('PTTL', KEYS[1]) - (exp - now)
if rest < 0 then rest = 0 end
${LOCAL_ONLY}redis.call('SET', KEYS[1], '0:' .. (now + lease) .. ':' .. att .. ':' .. tok, 'PX', lease + rest)
`
const EXTEND_SCRIPT = `if ARGV[1] == '' then return 0 end
${EXTEND_LEASE}return 1`
const EXTEND_ORDER_SCRIPT = `if ARGV[1] == '' then return 0 end
${EXTEND_LEASE}if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('PEXPIRE', KEYS[2], lease) end
return 1`

// 0 absent (no key, released, lease or retention over), 1 in flight, 2 done. Reads only.
const LOOKUP_SCRIPT = `local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
${NOW}
local done, exp = string.match(cur, '^(%d):(%d+):')
if tonumber(exp) <= now then return 0 end
if done == '1' then return 2 end
return 1`

// Completed by: KEYS[1]; ARGV the claim's attempt. 1 when the key is done, not expired, and its
// record keeps that attempt: the claim's own complete recorded it (each claim of a key until it is
// done takes the next attempt; a done key's record keeps its claim's). A complete that found no key
// at all (the lease went with a restart) records attempt 1: a later claim's answer is then false.
const COMPLETED_BY_SCRIPT = `local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
${NOW}
local done, exp, att = string.match(cur, '^(%d):(%d+):(%d+):')
if done ~= '1' or tonumber(exp) <= now or att ~= ARGV[1] then return 0 end
return 1`

/** A Lua script and its SHA-1, for EVALSHA. */
export interface Script {
  source: string
  sha: string
}

/** A script of `source`, with its SHA-1. */
export const script = (source: string): Script => ({ source, sha: createHash('sha1').update(source).digest('hex') })
/**
 * The store's scripts: each run on one key; the ordered ones (built from the same parts as the
 * plain ones, never by editing their text) also on the mark key and the lock key: `claimOrder`
 * and `completeOrder` on [dedup, mark, lock, facts], `releaseOrder` and `extendOrder` on [dedup, lock].
 */
export const SCRIPTS: Record<
  'claim' | 'complete' | 'claimOrder' | 'completeOrder' | 'release' | 'releaseOrder' | 'extend' | 'extendOrder' | 'lookup' | 'completedBy',
  Script
> = {
  claim: script(CLAIM_SCRIPT),
  complete: script(COMPLETE_SCRIPT),
  claimOrder: script(CLAIM_ORDER_SCRIPT),
  completeOrder: script(COMPLETE_ORDER_SCRIPT),
  release: script(RELEASE_SCRIPT),
  releaseOrder: script(RELEASE_ORDER_SCRIPT),
  extend: script(EXTEND_SCRIPT),
  extendOrder: script(EXTEND_ORDER_SCRIPT),
  lookup: script(LOOKUP_SCRIPT),
  completedBy: script(COMPLETED_BY_SCRIPT),
}
