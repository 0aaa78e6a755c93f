/**
 * The Lua scripts of `RedisDedupStore`: each one reads and writes one key atomically, on the
 * server's clock (`TIME`); the ordering variants of claim and complete also read or advance the
 * mark key (a hash: ms, id, type; expiring with the retention) in the same script. Bundled into
 * the Redis subpath.
 */
import { createHash } from 'node:crypto'

// Values: "<done 0|1>:<expires at, server ms>:<attempt>:<token>". The key itself outlives a
// lease by the retention, so a re-claim after a lapsed lease or a release knows the attempt
// number; a done key expires with its retention and is then forgotten (attempt 1 again).
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

const CLAIM_SCRIPT = `${NOW}
local lease = tonumber(ARGV[2])
local attempt = 1
local cur = redis.call('GET', KEYS[1])
if cur then
  local done, exp, att = string.match(cur, '^(%d):(%d+):(%d+):')
  exp = tonumber(exp)
  if exp > now then
    if done == '1' then return {0, 0} end
    return {1, exp - now}
  end
  if done == '0' then attempt = tonumber(att) + 1 end
end
redis.call('SET', KEYS[1], '0:' .. (now + lease) .. ':' .. attempt .. ':' .. ARGV[1], 'PX', lease + tonumber(ARGV[3]))
return {2, attempt}`

const COMPLETE_SCRIPT = `if ARGV[1] == '' then return 0 end
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local done, att, tok = string.match(cur, '^(%d):%d+:(%d+):(.*)$')
if done ~= '0' or tok ~= ARGV[1] then return 0 end
${NOW}
local retention = tonumber(ARGV[2])
redis.call('SET', KEYS[1], '1:' .. (now + retention) .. ':' .. att .. ':', 'PX', retention)
return 1`

const RELEASE_SCRIPT = `if ARGV[1] == '' then return 0 end
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local done, att, tok = string.match(cur, '^(%d):%d+:(%d+):(.*)$')
if done ~= '0' or tok ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], '0:0:' .. att .. ':', 'KEEPTTL')
return 1`

// 0 absent (no key, released, lease or retention over), 1 in flight, 2 done. Reads only.
const LOOKUP_SCRIPT = `local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
${NOW}
local done, exp = string.match(cur, '^(%d):(%d+):')
if tonumber(exp) <= now then return 0 end
if done == '1' then return 2 end
return 1`

// Ordering: a claim also returns the live mark of KEYS[2]; a complete that succeeds advances it
// (ARGV[3..5]: created_at ms, event id, type) when newer. Ids compare byte by byte: Lua's `<` on
// strings follows the server's locale (strcoll).
const CLAIM_ORDER_SCRIPT = CLAIM_SCRIPT.replace(
  'return {2, attempt}',
  `local m = redis.call('HMGET', KEYS[2], 'ms', 'id', 'type')
return {2, attempt, m[1], m[2], m[3]}`,
)

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

const COMPLETE_ORDER_SCRIPT =
  NEWER +
  COMPLETE_SCRIPT.replace(
    /return 1$/,
    `local m = redis.call('HMGET', KEYS[2], 'ms', 'id')
if newer(ARGV[3], ARGV[4], m[1], m[2]) then redis.call('HSET', KEYS[2], 'ms', ARGV[3], 'id', ARGV[4], 'type', ARGV[5]) end
redis.call('PEXPIRE', KEYS[2], retention)
return 1`,
  )

/** A Lua script and its SHA-1, for EVALSHA. */
export interface Script {
  source: string
  sha: string
}

const script = (source: string): Script => ({ source, sha: createHash('sha1').update(source).digest('hex') })
/** The store's scripts: each run on one key, `claimOrder` and `completeOrder` on the dedup key and the mark key. */
export const SCRIPTS: Record<'claim' | 'complete' | 'claimOrder' | 'completeOrder' | 'release' | 'lookup', Script> = {
  claim: script(CLAIM_SCRIPT),
  complete: script(COMPLETE_SCRIPT),
  claimOrder: script(CLAIM_ORDER_SCRIPT),
  completeOrder: script(COMPLETE_ORDER_SCRIPT),
  release: script(RELEASE_SCRIPT),
  lookup: script(LOOKUP_SCRIPT),
}
