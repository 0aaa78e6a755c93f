/**
 * `RedisDedupStore`: dedup shared by every instance of an app, in Redis, through ioredis (an
 * optional peer dependency, loaded only by this module). Each operation is one Lua script on one
 * key, so it runs atomically on the server's clock and works on a cluster. Durability comes from
 * the server: `appendonly yes` with `appendfsync always`, and `maxmemory-policy noeviction`; the
 * store checks these once and refuses a server that would lose completions.
 */
import { createHash } from 'node:crypto'
import { DedupStoreError, type DedupStoreErrorCode } from '@email-webhooks/core'
import { optionalDriver } from './store/driver.js'
import { passwordOf, redactUrl, scrub } from './store/redact.js'
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupStore } from './store/types.js'

const PACKAGE = '[@email-webhooks/core/redis]'
/** Key prefix used when `prefix` is not given. */
export const DEFAULT_REDIS_PREFIX = 'email-webhooks:dedup:'
const CONNECT_TIMEOUT_MS = 5_000

/** The part of an ioredis client the store uses; an ioredis `Redis` or `Cluster` fits. */
export interface RedisClient {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>
  config(subcommand: 'GET', parameter: string): Promise<unknown>
  quit(): Promise<unknown>
}

/** Options of {@link RedisDedupStore}: give `url` or `client`. */
export interface RedisDedupStoreOptions {
  /** `redis://:password@host:6379/0` (or `rediss://`); the store creates (and closes) its own ioredis client. */
  url?: string
  /** An existing ioredis client (`Redis` or `Cluster`); the store never closes it. */
  client?: RedisClient
  /** Prefix of every key; default `email-webhooks:dedup:`. */
  prefix?: string
  /**
   * Check once, with `CONFIG GET`, that the server keeps completions: `appendonly yes`,
   * `appendfsync always` and `maxmemory-policy noeviction` (default true). A server that forbids
   * `CONFIG` (many managed services) is not checked. Set false only if you accept losing up to a
   * second of completions on a server crash, or eviction of in-flight and done keys.
   */
  checkDurability?: boolean
}

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

interface Script {
  source: string
  sha: string
}

const script = (source: string): Script => ({ source, sha: createHash('sha1').update(source).digest('hex') })
const SCRIPTS = { claim: script(CLAIM_SCRIPT), complete: script(COMPLETE_SCRIPT), release: script(RELEASE_SCRIPT) }

type RedisConstructor = new (
  url: string,
  options: { connectTimeout: number; maxRetriesPerRequest: number; lazyConnect: boolean },
) => RedisClient & { on(event: 'error', listener: (error: Error) => void): unknown; disconnect(): void }

const loadDriver = optionalDriver(
  'ioredis',
  (module) => {
    const loaded = module as RedisConstructor & { Redis?: RedisConstructor; default?: RedisConstructor }
    return loaded.Redis ?? loaded.default ?? loaded
  },
  `${PACKAGE} ioredis could not be loaded, so the Redis dedup store is unavailable. Install it with \`npm install ioredis\` (version 5).`,
)

/**
 * Dedup store in Redis, shared by every instance that points at the same server (or cluster).
 * @throws {TypeError} when neither `url` nor `client` is given.
 * @throws {DedupStoreError} `driver_missing` when `url` is given and ioredis is not installed.
 * @example
 * const store = new RedisDedupStore({ url: process.env.REDIS_URL })
 */
export class RedisDedupStore implements DedupStore {
  readonly #client: RedisClient
  readonly #ownsClient: boolean
  readonly #prefix: string
  readonly #target: string
  readonly #secret: string | undefined
  readonly #checkDurability: boolean
  #checked: Promise<void> | undefined
  #closed = false

  constructor(options: RedisDedupStoreOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} RedisDedupStore needs { url } or { client }.`)
    const { url, client } = options
    if ((url === undefined) === (client === undefined)) {
      throw new TypeError(`${PACKAGE} RedisDedupStore needs exactly one of { url } or { client }.`)
    }
    const prefix = options.prefix ?? DEFAULT_REDIS_PREFIX
    if (typeof prefix !== 'string') throw new TypeError(`${PACKAGE} prefix must be a string.`)
    this.#prefix = prefix
    this.#checkDurability = options.checkDurability ?? true
    if (client !== undefined) {
      if (client === null || typeof client !== 'object' || typeof client.evalsha !== 'function' || typeof client.eval !== 'function') {
        throw new TypeError(`${PACKAGE} client must be an ioredis client (Redis or Cluster).`)
      }
      this.#client = client
      this.#ownsClient = false
      this.#target = 'Redis (the given client)'
    } else {
      if (typeof url !== 'string' || !/^rediss?:\/\//.test(url)) {
        throw new TypeError(`${PACKAGE} url must be a redis:// or rediss:// URL such as redis://:password@host:6379/0.`)
      }
      const Redis = loadDriver()
      // One retry per command: an unreachable server fails the call quickly (the receiver answers
      // 503 and the sender retries) instead of queueing it for as long as the outage lasts.
      const created = new Redis(url, { connectTimeout: CONNECT_TIMEOUT_MS, maxRetriesPerRequest: 1, lazyConnect: true })
      created.on('error', () => {})
      this.#client = created
      this.#ownsClient = true
      this.#target = `Redis at ${redactUrl(url)}`
      this.#secret = passwordOf(url)
    }
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    const token = crypto.randomUUID()
    const reply = (await this.#run(SCRIPTS.claim, key, token, opts.leaseMs, opts.retentionMs)) as [number, number]
    if (reply[0] === 2) return { status: 'acquired', claim: { key, token, attempt: reply[1] } }
    if (reply[0] === 0) return { status: 'duplicate' }
    return { status: 'in_flight', retryAfterMs: Math.max(1, reply[1]) }
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    return (await this.#run(SCRIPTS.complete, claim.key, claim.token, opts.retentionMs)) === 1
  }

  async release(claim: Claim): Promise<boolean> {
    return (await this.#run(SCRIPTS.release, claim.key, claim.token)) === 1
  }

  /** Closes the client if the store created it (a given client stays open). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#checked?.catch(() => {})
    if (this.#ownsClient) {
      const client = this.#client as RedisClient & { status?: string; disconnect(): void }
      // quit() waits for the server's answer; with no connection, drop the reconnect loop at once.
      if (client.status !== 'ready') client.disconnect()
      else await client.quit().catch(() => client.disconnect())
    }
  }

  async #run(script: Script, key: string, ...args: (string | number)[]): Promise<unknown> {
    if (this.#closed) throw new DedupStoreError('closed', `${PACKAGE} this RedisDedupStore was closed.`)
    if (this.#checkDurability) {
      this.#checked ??= this.#checkServer().catch((error: unknown) => {
        this.#checked = undefined
        throw error
      })
      await this.#checked
    }
    const fullKey = this.#prefix + key
    try {
      try {
        return await this.#client.evalsha(script.sha, 1, fullKey, ...args)
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
        return await this.#client.eval(script.source, 1, fullKey, ...args)
      }
    } catch (error) {
      throw this.#wrap(error)
    }
  }

  async #checkServer(): Promise<void> {
    let settings: Map<string, string>
    try {
      const pairs = (await Promise.all(['appendonly', 'appendfsync', 'maxmemory-policy'].map((name) => this.#client.config('GET', name))))
        .flat()
        .map(String)
      settings = new Map()
      for (let i = 0; i + 1 < pairs.length; i += 2) settings.set(pairs[i] as string, pairs[i + 1] as string)
    } catch (error) {
      // Managed services often rename or forbid CONFIG: nothing to check then.
      if (error instanceof Error && /unknown command|NOPERM|not allowed|ERR unknown/i.test(error.message)) return
      throw this.#wrap(error)
    }
    const problems: string[] = []
    if (settings.get('appendonly') === 'no') problems.push('appendonly is no (set appendonly yes)')
    const fsync = settings.get('appendfsync')
    if (fsync !== undefined && fsync !== 'always') problems.push(`appendfsync is ${fsync} (set appendfsync always)`)
    const policy = settings.get('maxmemory-policy')
    if (policy !== undefined && policy !== 'noeviction') problems.push(`maxmemory-policy is ${policy} (set maxmemory-policy noeviction)`)
    if (problems.length > 0) {
      throw new DedupStoreError(
        'misconfigured',
        `${PACKAGE} ${this.#target} can lose completed events: ${problems.join('; ')}. Change the server's configuration, or pass checkDurability: false if you accept the loss (see the README, "Running many instances").`,
      )
    }
  }

  #wrap(error: unknown): DedupStoreError {
    const detail = error instanceof Error ? error.message : String(error)
    const errno = (error as { code?: unknown } | null)?.code
    let code: DedupStoreErrorCode
    let message: string
    if (/^(NOAUTH|WRONGPASS)/.test(detail) || /invalid password|invalid username-password/i.test(detail)) {
      code = 'auth_failed'
      message = `${this.#target} refused the credentials: check the password (and user) in the URL or the client.`
    } else if (
      (typeof errno === 'string' && /^E[A-Z]+$/.test(errno)) ||
      /Connection is closed|MaxRetriesPerRequest|connect ETIMEDOUT|Stream isn't writeable|enableOfflineQueue/i.test(detail)
    ) {
      code = 'connection_failed'
      message = `cannot reach ${this.#target}${typeof errno === 'string' ? ` (${errno})` : ''}: check that the server runs and that the host and port are right.`
    } else if (/^(OOM|READONLY|MISCONF|NOPERM)/.test(detail)) {
      code = 'misconfigured'
      message = `${this.#target} refused the write (${detail.split(' ')[0]}): ${detail}. Check maxmemory, that the client talks to the primary, and the user's ACL.`
    } else {
      code = 'command_failed'
      message = `a command failed on ${this.#target}: ${detail}`
    }
    return new DedupStoreError(code, scrub(`${PACKAGE} ${message}`, this.#secret), { cause: withoutCommand(error) })
  }
}

/**
 * ioredis attaches the failed command with its arguments to a reply error; for AUTH (sent on
 * connect) those are the password. The cause we keep has the message, name and code only.
 */
function withoutCommand(error: unknown): unknown {
  if (!(error instanceof Error) || !('command' in error)) return error
  const copy = new Error(error.message)
  copy.name = error.name
  const code = (error as { code?: unknown }).code
  if (code !== undefined) Object.assign(copy, { code })
  return copy
}
