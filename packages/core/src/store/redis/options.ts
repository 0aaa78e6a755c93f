/**
 * The options of `RedisDedupStore` (a URL, whose client the store makes and closes, or a client of
 * the app's), checked once when it is made, and the check of each call's durations. Bundled into
 * the Redis subpath.
 */
// By package name, not './errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import { optionalDriver } from '../driver.js'
import { callDurationProblem, durationProblem } from '../durations.js'
import { passwordOf, redactUrl } from '../redact.js'
import type { ClaimOptions } from '../types.js'
import { PACKAGE } from './errors.js'

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

/** Options of `RedisDedupStore`: give `url` or `client`. */
export interface RedisDedupStoreOptions {
  /**
   * `redis://:password@host:6379/0` or `rediss://…`. The store opens its own ioredis client (one
   * retry per command, 5 s connect timeout, `commandTimeoutMs` per command, TCP keep-alive after 10
   * s idle) and closes it on `close()`. Give this or `client`, not both.
   */
  url?: string
  /**
   * An existing ioredis `Redis` or `Cluster` instead (exactly one of the two). `close()` leaves it
   * open. Give it what the store gives its own: `commandTimeout` and `socketTimeout` (a few
   * seconds) and `keepAlive: 10000`; without them a connection that stops answering keeps every
   * command queued behind it (the receiver still answers 503 at `storeTimeoutMs`).
   */
  client?: RedisClient
  /**
   * Prefix of every key.
   * @defaultValue `email-webhooks:dedup:`
   */
  prefix?: string
  /**
   * On first use, read `appendonly`, `appendfsync` and `maxmemory-policy` with `CONFIG GET` and
   * refuse (`misconfigured`) a server that can lose completions: it must have `appendonly yes`,
   * `appendfsync always` and `maxmemory-policy noeviction`. A server that forbids `CONFIG`
   * (renamed, or an ACL without it, as on many managed services) cannot be checked: the store says
   * so once through `warn` and goes on. Set false only if you accept losing up to a second of
   * completions on a server crash, or eviction of in-flight and done keys.
   * @defaultValue `true`
   */
  checkDurability?: boolean
  /**
   * `{ replicas, timeoutMs, aof? }`: after each `complete()` (and inbox entry), run `WAIT replicas
   * timeoutMs` (or, with `aof: true`, `WAITAOF 1 replicas timeoutMs`: fsynced to the primary's and
   * the replicas' AOF; Redis 7.2 or later, `appendonly yes`). Fewer confirmations in time reject
   * with `durability_timeout`, so the event is not acknowledged and the sender retries. Guards
   * against losing acknowledged completions when a replica is promoted. `timeoutMs` is whole
   * milliseconds ≥ 1. Not with a `Cluster` client.
   * @defaultValue none: no wait
   */
  waitFor?: RedisWaitFor
  /**
   * Where the store's one-time warnings go (a server that forbids `CONFIG`). They name the server
   * with its password replaced by `***`.
   * @defaultValue `console.warn`
   */
  warn?: (message: string) => void
  /**
   * With `url`: the longest wait for one command, whole ms. Past it the command fails
   * (`DedupStoreError` code `timeout`), and a connection that owes an answer that long is destroyed
   * and opened again, so a stalled connection (a failover, a proxy that stops answering) costs the
   * calls of those seconds, not every later one. For a `client` of yours, set the same on it:
   * `commandTimeout`, `socketTimeout` and `keepAlive`.
   * @defaultValue `3000`
   */
  commandTimeoutMs?: number
}

/** The ioredis options the store sets on the client it makes. */
interface OwnClientOptions {
  connectTimeout: number
  maxRetriesPerRequest: number
  lazyConnect: boolean
  commandTimeout: number
  socketTimeout: number
  keepAlive: number
}

/** The longest wait for one command on the store's own client (twice the receiver's default storeTimeoutMs). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 3_000
/** TCP keep-alive probes start after this idle time on the store's own connection. */
const KEEP_ALIVE_DELAY_MS = 10_000

type RedisConstructor = new (
  url: string,
  options: OwnClientOptions,
) => RedisClient & { on(event: 'error', listener: (error: Error) => void): unknown; disconnect(): void }

const loadDriver = optionalDriver(
  'ioredis',
  (module) => {
    const loaded = module as RedisConstructor & { Redis?: RedisConstructor; default?: RedisConstructor }
    return loaded.Redis ?? loaded.default ?? loaded
  },
  `${PACKAGE} ioredis could not be loaded, so the Redis dedup store is unavailable. Install it with \`npm install ioredis\` (version 5).`,
)

/** How many copies of each completion `complete()` waits for, with `RedisDedupStoreOptions.waitFor`. */
export interface RedisWaitFor {
  /** Replicas that must confirm the completion (`WAIT replicas timeoutMs`); 0 checks nothing on its own. */
  replicas: number
  /** How long to wait for them, in whole milliseconds ≥ 1 (Redis reads 0 as "forever", so it is refused). */
  timeoutMs: number
  /**
   * Also wait until the completion is fsynced to the primary's own append-only file and to the
   * replicas' files (`WAITAOF 1 replicas timeoutMs`, Redis 7.2 or later, `appendonly yes`).
   * Default false: plain `WAIT`, which counts replicas that received the write.
   */
  aof?: boolean
}

/** An `invalid_options` error of the Redis store. */
export function invalidOption(problem: string): DedupStoreError {
  return new DedupStoreError('invalid_options', `${PACKAGE} RedisDedupStore: ${problem}`)
}

/** Redis refuses a fractional PX (`ERR value is not an integer`): refuse it here, with a message that says so. */
export function checkDurations(opts: Partial<ClaimOptions>, withLease: boolean): void {
  const problem = callDurationProblem(opts, withLease)
  if (problem) throw invalidOption(problem)
}

/** The validated `waitFor` option, or an `invalid_options` error. */
export function checkWaitFor(waitFor: RedisWaitFor, client: { call?: unknown }): RedisWaitFor {
  if (waitFor === null || typeof waitFor !== 'object') throw invalidOption('waitFor must be { replicas, timeoutMs, aof? }.')
  const { replicas, timeoutMs, aof = false } = waitFor
  if (!Number.isSafeInteger(replicas) || replicas < 0) throw invalidOption(`waitFor.replicas must be a whole number ≥ 0, got ${replicas}.`)
  const problem = durationProblem('waitFor.timeoutMs', timeoutMs)
  if (problem) throw invalidOption(problem)
  if (typeof aof !== 'boolean') throw invalidOption('waitFor.aof must be true or false.')
  if (typeof client.call !== 'function') throw invalidOption('waitFor needs a client with call() (an ioredis Redis client).')
  if ((client as { isCluster?: unknown }).isCluster === true) {
    throw invalidOption(
      'waitFor does not work with a Cluster client (WAIT must reach the primary that holds each key); use a Redis client.',
    )
  }
  return { replicas, timeoutMs, aof }
}

/** The store's client and what it says about the server, from the checked options. */
export interface RedisConnection {
  client: RedisClient
  /** The store made the client: it closes it. */
  ownsClient: boolean
  /** The server in messages, with its password replaced. */
  target: string
  /** The password, scrubbed from every message. */
  secret: string | undefined
  prefix: string
  checkDurability: boolean
  waitFor: RedisWaitFor | undefined
  warn: (message: string) => void
}

/**
 * Checks the options and makes the client (from a URL) or takes the given one.
 * @throws {TypeError} when neither or both of `url` and `client` are given, or one of them is not usable.
 * @throws {DedupStoreError} `driver_missing` when `url` is given and ioredis is not installed; `invalid_options` for a `waitFor` it cannot honour or a `warn` that is not a function.
 */
export function connect(options: RedisDedupStoreOptions): RedisConnection {
  if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} RedisDedupStore needs { url } or { client }.`)
  const { url, client } = options
  if ((url === undefined) === (client === undefined)) {
    throw new TypeError(`${PACKAGE} RedisDedupStore needs exactly one of { url } or { client }.`)
  }
  const prefix = options.prefix ?? DEFAULT_REDIS_PREFIX
  if (typeof prefix !== 'string') throw new TypeError(`${PACKAGE} prefix must be a string.`)
  const warn = options.warn ?? ((message: string) => console.warn(message))
  if (typeof warn !== 'function') throw invalidOption('warn must be a function such as console.warn.')
  const common = { prefix, checkDurability: options.checkDurability ?? true, warn }
  let connection: Omit<RedisConnection, 'waitFor'>
  if (client !== undefined) {
    if (options.commandTimeoutMs !== undefined) {
      throw new TypeError(
        `${PACKAGE} commandTimeoutMs applies to the client the store makes from url; set commandTimeout and socketTimeout on your own client instead.`,
      )
    }
    if (client === null || typeof client !== 'object' || typeof client.evalsha !== 'function' || typeof client.eval !== 'function') {
      throw new TypeError(`${PACKAGE} client must be an ioredis client (Redis or Cluster).`)
    }
    connection = { client, ownsClient: false, target: 'Redis (the given client)', secret: undefined, ...common }
  } else {
    if (typeof url !== 'string' || !/^rediss?:\/\//.test(url)) {
      throw new TypeError(`${PACKAGE} url must be a redis:// or rediss:// URL such as redis://:password@host:6379/0.`)
    }
    const commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    if (!Number.isSafeInteger(commandTimeoutMs) || commandTimeoutMs < 1) {
      throw invalidOption(`commandTimeoutMs must be a whole number of milliseconds ≥ 1, got ${String(options.commandTimeoutMs)}.`)
    }
    const Redis = loadDriver()
    // One retry per command: an unreachable server fails the call quickly (the receiver answers
    // 503 and the sender retries) instead of queueing it for as long as the outage lasts. A
    // command without an answer fails at commandTimeout, and a connection that owes one that long
    // is destroyed (socketTimeout) rather than kept, with every later command queued behind it.
    // What was in flight on a dropped connection is sent again on the next one (ioredis's
    // default): every script of the store is safe to run twice with the same token.
    const created = new Redis(url, {
      connectTimeout: CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 1,
      lazyConnect: true,
      commandTimeout: commandTimeoutMs,
      socketTimeout: commandTimeoutMs,
      keepAlive: KEEP_ALIVE_DELAY_MS,
    })
    created.on('error', () => {})
    connection = { client: created, ownsClient: true, target: `Redis at ${redactUrl(url)}`, secret: passwordOf(url), ...common }
  }
  return { ...connection, waitFor: options.waitFor === undefined ? undefined : checkWaitFor(options.waitFor, connection.client) }
}
