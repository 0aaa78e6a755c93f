/**
 * `RedisDedupStore`: dedup shared by every instance of an app, in Redis, through ioredis (an
 * optional peer dependency, loaded only by this module). Each operation is one Lua script on one
 * key, so it runs atomically on the server's clock and works on a cluster. Ordering (not on a
 * Cluster client): claim and complete scripts also read and advance the mark key `<prefix>order:<key>`,
 * take and free the order key's lock `<prefix>order-lock:<key>`, and count its facts in
 * `<prefix>order-fact:<key>`. Durability comes from
 * the server: `appendonly yes` with `appendfsync always`, and `maxmemory-policy noeviction`; the
 * store checks these once and refuses a server that would lose completions (or warns once when
 * the server forbids the check). `waitFor` adds `WAIT`/`WAITAOF` after each completion.
 */
// By package name, not './errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import type { OrderMark } from '../ordering/position.js'
import { optionalDriver } from './driver.js'
import { passwordOf, redactUrl, scrub } from './redact.js'
import { classify, withoutCommand } from './redis-errors.js'
import type { RedisWaitFor } from './redis-options.js'
import { checkDurations, checkWaitFor, invalidOption } from './redis-options.js'
import { SCRIPTS, type Script } from './redis-scripts.js'
import type { Claim, ClaimOptions, ClaimOrder, ClaimResult, CompleteOptions, DedupKeyState, DedupStore } from './types.js'

export type { RedisWaitFor } from './redis-options.js'

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
  /** Any command by name; needed only with the `waitFor` option (ioredis has it). */
  call?(command: string, ...args: (string | number)[]): Promise<unknown>
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
   * `CONFIG` (many managed services) cannot be checked: the store says so once through `warn`
   * and goes on. Set false only if you accept losing up to a second of completions on a server
   * crash, or eviction of in-flight and done keys.
   */
  checkDurability?: boolean
  /**
   * After each `complete()`, wait until this many replicas (and, with `aof`, the AOF files) hold
   * the completion; fewer in time rejects with `durability_timeout`, so the event is not
   * acknowledged. Guards against losing acknowledged completions when a replica is promoted.
   * Not with a Cluster client. Default: no wait.
   */
  waitFor?: RedisWaitFor
  /** Where the store's one-time warnings go (a server that forbids `CONFIG`); default `console.warn`. */
  warn?: (message: string) => void
}

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

/** Where marks live, after the prefix: apart from the dedup keys (`<prefix><namespace>:<id>`). */
const ORDER_KEY = 'order:'
/** Where the lock of each order key lives (the token of the claim that holds it), after the prefix. */
const LOCK_KEY = 'order-lock:'
/** Where the fact counts of each order key live (a hash), after the prefix. */
const FACT_KEY = 'order-fact:'

/** The keys of an ordered script: the dedup key, then the mark, the lock and the facts of `orderKey`. */
const orderedKeys = (key: string, orderKey: string): string[] => [key, ORDER_KEY + orderKey, LOCK_KEY + orderKey, FACT_KEY + orderKey]

function markOf(ms: string | null | undefined, id: string | null | undefined, type: string | null | undefined): OrderMark | null {
  if (ms === null || ms === undefined || id === null || id === undefined || type === null || type === undefined) return null
  return { createdAtMs: Number(ms), eventId: id, type }
}

const markArgs = (mark: OrderMark): (string | number)[] => [mark.createdAtMs, mark.eventId, mark.type]

/**
 * Dedup store in Redis, shared by every instance that points at the same server (or cluster).
 * Its calls reject with a {@link DedupStoreError} (`invalid_options` for a `leaseMs`/`retentionMs`
 * that is not a whole number of milliseconds ≥ 1, `durability_timeout` from `waitFor`, the
 * server's failures by their own codes).
 * @throws {TypeError} when neither `url` nor `client` is given.
 * @throws {DedupStoreError} `driver_missing` when `url` is given and ioredis is not installed;
 * `invalid_options` for a `waitFor` it cannot honour or a `warn` that is not a function.
 * @example
 * const store = new RedisDedupStore({ url: process.env.REDIS_URL })
 */
export class RedisDedupStore implements DedupStore {
  /**
   * Ordering capability: `true`, except on an ioredis Cluster client, where the mark key and the
   * event's key may live in different slots (one script cannot touch both): ordering is then `unknown`.
   */
  readonly ordering?: true
  readonly #client: RedisClient
  readonly #ownsClient: boolean
  readonly #prefix: string
  readonly #target: string
  readonly #secret: string | undefined
  readonly #checkDurability: boolean
  readonly #waitFor: RedisWaitFor | undefined
  readonly #warn: (message: string) => void
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
    this.#warn = options.warn ?? ((message) => console.warn(message))
    if (typeof this.#warn !== 'function') throw invalidOption('warn must be a function such as console.warn.')
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
    this.#waitFor = options.waitFor === undefined ? undefined : checkWaitFor(options.waitFor, this.#client)
    if ((this.#client as { isCluster?: unknown }).isCluster !== true) this.ordering = true
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    checkDurations(opts, true)
    const token = crypto.randomUUID()
    const order = this.ordering ? opts.order : undefined
    const reply = (
      order
        ? await this.#run(SCRIPTS.claimOrder, orderedKeys(key, order.key), token, opts.leaseMs, opts.retentionMs, order.fact ?? '')
        : await this.#run(SCRIPTS.claim, [key], token, opts.leaseMs, opts.retentionMs)
    ) as [number, number, ...(string | null | undefined)[]]
    if (reply[0] === 2) {
      if (!order) return { status: 'acquired', claim: { key, token, attempt: reply[1] } }
      const claim = { key, token, attempt: reply[1], orderKey: order.key }
      const found: ClaimOrder = { mark: markOf(reply[2], reply[3], reply[4]) }
      if (order.fact !== undefined) found.fact = { handled: Number(reply[5] ?? 0), reconciled: Number(reply[6] ?? 0) }
      return { status: 'acquired', claim, order: found }
    }
    if (reply[0] === 0) return { status: 'duplicate' }
    if (reply[0] === 3) return { status: 'in_flight', retryAfterMs: Math.max(1, reply[1]), reason: 'order' }
    return { status: 'in_flight', retryAfterMs: Math.max(1, reply[1]) }
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    checkDurations(opts, false)
    const order = this.ordering ? opts.order : undefined
    const reply = order
      ? await this.#run(
          SCRIPTS.completeOrder,
          orderedKeys(claim.key, order.key),
          claim.token,
          opts.retentionMs,
          ...markArgs(order.mark),
          ...(order.fact !== undefined && opts.factChange ? [order.fact, opts.factChange.handled, opts.factChange.reconciled] : ['', 0, 0]),
        )
      : await this.#run(SCRIPTS.complete, [claim.key], claim.token, opts.retentionMs)
    const done = reply === 1
    if (done && this.#waitFor) await this.#awaitCopies(this.#waitFor)
    return done
  }

  async release(claim: Claim): Promise<boolean> {
    if (claim.orderKey === undefined || !this.ordering) return (await this.#run(SCRIPTS.release, [claim.key], claim.token)) === 1
    return (await this.#run(SCRIPTS.releaseOrder, [claim.key, LOCK_KEY + claim.orderKey], claim.token)) === 1
  }

  /** What Redis holds for `key` now, on the server's clock: one read-only script. Expired keys are `'absent'`. */
  async lookup(key: string): Promise<DedupKeyState> {
    const state = await this.#run(SCRIPTS.lookup, [key])
    return state === 2 ? 'done' : state === 1 ? 'in_flight' : 'absent'
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

  /** Runs `script` on `keys` (the dedup key, then the mark and lock keys of the ordered scripts), loading it once if the server lost it. */
  async #run(script: Script, names: string[], ...args: (string | number)[]): Promise<unknown> {
    if (this.#closed) throw new DedupStoreError('closed', `${PACKAGE} this RedisDedupStore was closed.`)
    if (this.#checkDurability) {
      this.#checked ??= this.#checkServer().catch((error: unknown) => {
        this.#checked = undefined
        throw error
      })
      await this.#checked
    }
    const keys = names.map((name) => this.#prefix + name)
    try {
      try {
        return await this.#client.evalsha(script.sha, keys.length, ...keys, ...args)
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
        return await this.#client.eval(script.source, keys.length, ...keys, ...args)
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
      // Managed services often rename or forbid CONFIG: say once that nothing was checked.
      if (error instanceof Error && /unknown command|NOPERM|not allowed|ERR unknown/i.test(error.message)) {
        const reply = error.message.split(' ')[0] ?? 'an error'
        this.#warn(
          scrub(
            `${PACKAGE} ${this.#target} does not allow CONFIG GET (${reply}), so the store cannot check that it keeps completed events. Make sure the server runs with appendonly yes, appendfsync always and maxmemory-policy noeviction (on a managed service: its persistence and eviction settings), or pass checkDurability: false to skip the check and this warning.`,
            this.#secret,
          ),
        )
        return
      }
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

  /** WAIT or WAITAOF on the connection that wrote the completion; too few copies in time is a `durability_timeout`. */
  async #awaitCopies({ replicas, timeoutMs, aof }: RedisWaitFor): Promise<void> {
    const call = (this.#client.call as NonNullable<RedisClient['call']>).bind(this.#client)
    let local = 1
    let copies: number
    try {
      if (aof) {
        const reply = (await call('WAITAOF', 1, replicas, timeoutMs)) as unknown[]
        local = Number(reply[0])
        copies = Number(reply[1])
      } else {
        copies = Number(await call('WAIT', replicas, timeoutMs))
      }
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      if (aof && /unknown command/i.test(detail)) {
        throw new DedupStoreError(
          'misconfigured',
          `${PACKAGE} ${this.#target} does not know WAITAOF (Redis 7.2 or later has it): upgrade the server, or use waitFor without aof.`,
          { cause: withoutCommand(error) },
        )
      }
      if (aof && /appendonly is disabled|numlocal/i.test(detail)) {
        throw new DedupStoreError('misconfigured', `${PACKAGE} ${this.#target} refused WAITAOF: ${detail}. Set appendonly yes.`, {
          cause: withoutCommand(error),
        })
      }
      throw this.#wrap(error)
    }
    if (local >= 1 && copies >= replicas) return
    const seen = aof ? `${local} of 1 local AOF fsync and ${copies} of ${replicas} replicas` : `${copies} of ${replicas} replicas`
    throw new DedupStoreError(
      'durability_timeout',
      `${PACKAGE} a completion was written on ${this.#target} but only ${seen} confirmed it within ${timeoutMs} ms, so it is not acknowledged (the sender retries). Check the replicas (INFO replication) or raise waitFor.timeoutMs.`,
    )
  }

  #wrap(error: unknown): DedupStoreError {
    const { code, message } = classify(error, this.#target)
    return new DedupStoreError(code, scrub(`${PACKAGE} ${message}`, this.#secret), { cause: withoutCommand(error) })
  }
}
