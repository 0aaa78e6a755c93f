/**
 * `DenoKvDedupStore`: durable dedup for Deno apps in Deno KV (a local SQLite file with
 * `Deno.openKv(path)`, or Deno Deploy's KV), where better-sqlite3 cannot load. One KV entry per
 * dedup key, under `['email_webhook_dedup', key]`. Every write is an atomic check-and-set on the
 * entry's versionstamp (`kv.atomic().check(entry).set(…)`), read with strong consistency: of any
 * number of concurrent claims of a key at most one commits, and the others read the winner. Times
 * are ms on the caller's clock, checked in the value; KV's `expireIn` only lets KV delete what
 * expired. No ordering capability, no inbox (the receiver says so when asked for them).
 */
// By package name, not '../errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import { callDurationProblem, durationProblem } from '../durations.js'
import { newerSchemaError } from '../schema-version.js'
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupKeyState, DedupStore, ExtendOptions } from '../types.js'

const PACKAGE = '[@email-webhooks/core/deno-kv]'
/** The first part of every key the store writes, when `prefix` is not given. */
export const DEFAULT_DENO_KV_PREFIX = 'email_webhook_dedup'
/** A released or lapsed lease keeps its attempt count this long (the next claim continues it). */
const LEASE_MEMORY_MS = 60 * 60 * 1000
/** Rounds of a check-and-set that lost to another writer of the same entry. */
const ROUNDS = 16

/** One entry as `kv.get` returns it. */
export interface DenoKvEntryLike<T> {
  value: T | null
  versionstamp: string | null
}

/** An atomic operation of Deno KV: the part the store uses. */
export interface DenoKvAtomicLike {
  check(...checks: { key: readonly unknown[]; versionstamp: string | null }[]): DenoKvAtomicLike
  set(key: readonly unknown[], value: unknown, options?: { expireIn?: number }): DenoKvAtomicLike
  commit(): Promise<{ ok: boolean }>
}

/** The part of a `Deno.Kv` the store uses. */
export interface DenoKvLike {
  get<T = unknown>(key: readonly unknown[], options?: { consistency?: 'strong' | 'eventual' }): Promise<DenoKvEntryLike<T>>
  atomic(): DenoKvAtomicLike
}

/** Options of {@link DenoKvDedupStore}. */
export interface DenoKvDedupStoreOptions {
  /**
   * First part of every key.
   * @defaultValue `email_webhook_dedup`
   */
  prefix?: string
  /**
   * Clock in milliseconds since the epoch, for leases and retention.
   * @defaultValue `Date.now`
   */
  now?: () => number
}

/**
 * The layout of a value, written in each one (`schemaVersion`): 1 is the first. KV has nothing the
 * store owns to stamp, so every value carries it, at no extra read: the store reads a key before
 * each write, and refuses a value of a newer layout there, before writing anything.
 */
const DENO_KV_SCHEMA_VERSION = 1

/** The value of one key: a lease (held while it has a token and `expiresAt` is ahead), or done. */
interface Row {
  done: boolean
  token: string | null
  attempt: number
  expiresAt: number
  /** The layout's version (absent in values written before it was recorded: version 1). */
  schemaVersion?: number
}

/**
 * Dedup store in Deno KV. Its calls reject with a {@link DedupStoreError}: `invalid_options` for a
 * `leaseMs`/`retentionMs` that is not a whole number of milliseconds ≥ 1, `command_failed` when KV
 * fails a read or a commit.
 * @param kv The database, from `await Deno.openKv()`.
 * @throws {TypeError} when `kv` is not a Deno KV database or an option is invalid.
 * @example
 * const store = new DenoKvDedupStore(await Deno.openKv())
 */
export class DenoKvDedupStore implements DedupStore {
  /** No ordering capability: the receiver reports `ctx.order` as `unknown` (`store_without_ordering`). */
  readonly ordering = false as const
  readonly #kv: DenoKvLike
  readonly #prefix: string
  readonly #now: () => number

  constructor(kv: DenoKvLike, options: DenoKvDedupStoreOptions = {}) {
    if (kv === null || typeof kv !== 'object' || typeof kv.get !== 'function' || typeof kv.atomic !== 'function') {
      throw new TypeError(`${PACKAGE} DenoKvDedupStore needs a Deno KV database: await Deno.openKv().`)
    }
    const prefix = options.prefix ?? DEFAULT_DENO_KV_PREFIX
    if (typeof prefix !== 'string' || prefix.length === 0) throw new TypeError(`${PACKAGE} prefix must be a non-empty string.`)
    if (options.now !== undefined && typeof options.now !== 'function')
      throw new TypeError(`${PACKAGE} now must be a function returning ms.`)
    this.#kv = kv
    this.#prefix = prefix
    this.#now = options.now ?? Date.now
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    checkDurations(opts, true)
    for (let round = 0; round < ROUNDS; round++) {
      const entry = await this.#get(key)
      const row = entry.value
      const now = this.#now()
      if (row !== null && row.expiresAt > now) {
        if (row.done) return { status: 'duplicate' }
        if (row.token !== null) return { status: 'in_flight', retryAfterMs: Math.max(1, row.expiresAt - now) }
      }
      const token = crypto.randomUUID()
      const attempt = row !== null && !row.done ? row.attempt + 1 : 1
      const next: Row = { done: false, token, attempt, expiresAt: now + opts.leaseMs, schemaVersion: DENO_KV_SCHEMA_VERSION }
      if (await this.#set(key, entry, next, opts.leaseMs + LEASE_MEMORY_MS)) return { status: 'acquired', claim: { key, token, attempt } }
    }
    return { status: 'in_flight', retryAfterMs: 1 }
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    checkDurations(opts, false)
    return this.#change(claim, false, (row, now) => [
      { done: true, token: null, attempt: row.attempt, expiresAt: now + opts.retentionMs, schemaVersion: DENO_KV_SCHEMA_VERSION },
      opts.retentionMs,
    ])
  }

  async release(claim: Claim): Promise<boolean> {
    return this.#change(claim, false, (row, now) => [{ ...row, token: null, expiresAt: now }, LEASE_MEMORY_MS])
  }

  /** Renews the claim's lease from now, while its token holds it live. */
  async extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    const problem = durationProblem('leaseMs', opts?.leaseMs)
    if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} DenoKvDedupStore: ${problem}`)
    return this.#change(claim, true, (row, now) => [{ ...row, expiresAt: now + opts.leaseMs }, opts.leaseMs + LEASE_MEMORY_MS])
  }

  /** What KV holds for `key` now (one strongly consistent read). */
  async lookup(key: string): Promise<DedupKeyState> {
    const row = (await this.#get(key)).value
    if (row === null || row.expiresAt <= this.#now()) return 'absent'
    if (row.done) return 'done'
    return row.token === null ? 'absent' : 'in_flight'
  }

  /**
   * Writes `next(row)` while the claim's token holds the key (a lease not done; `live`: not lapsed
   * either), checked and set atomically; false when it does not hold it.
   */
  async #change(claim: Claim, live: boolean, next: (row: Row, now: number) => [Row, number]): Promise<boolean> {
    for (let round = 0; round < ROUNDS; round++) {
      const entry = await this.#get(claim.key)
      const row = entry.value
      const now = this.#now()
      if (row === null || row.done || row.token !== claim.token || (live && row.expiresAt <= now)) return false
      const [value, keepMs] = next(row, now)
      if (await this.#set(claim.key, entry, value, keepMs)) return true
    }
    return false
  }

  /** Reads the key's value (every write reads it first); a value of a newer layout is refused. */
  async #get(key: string): Promise<DenoKvEntryLike<Row>> {
    let entry: DenoKvEntryLike<Row>
    try {
      entry = await this.#kv.get<Row>([this.#prefix, key], { consistency: 'strong' })
    } catch (error) {
      throw wrap(error, 'read')
    }
    const version = entry.value?.schemaVersion
    if (typeof version === 'number' && version > DENO_KV_SCHEMA_VERSION) {
      const where = `the value of ${JSON.stringify([this.#prefix, key])} in Deno KV`
      throw newerSchemaError(PACKAGE, where, { version, writtenBy: undefined }, DENO_KV_SCHEMA_VERSION)
    }
    return entry
  }

  /** Sets the key's value if it is still the version of `entry`; KV may delete it `keepMs` later. */
  async #set(key: string, entry: DenoKvEntryLike<Row>, value: Row, keepMs: number): Promise<boolean> {
    try {
      const k = [this.#prefix, key]
      return (await this.#kv.atomic().check({ key: k, versionstamp: entry.versionstamp }).set(k, value, { expireIn: keepMs }).commit()).ok
    } catch (error) {
      throw wrap(error, 'commit')
    }
  }
}

function checkDurations(opts: Partial<ClaimOptions>, withLease: boolean): void {
  const problem = callDurationProblem(opts, withLease)
  if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} DenoKvDedupStore: ${problem}`)
}

function wrap(error: unknown, what: 'read' | 'commit'): DedupStoreError {
  const detail = error instanceof Error ? error.message : String(error)
  const code = /closed|BadResource/i.test(detail) ? 'closed' : 'command_failed'
  return new DedupStoreError(code, `${PACKAGE} a Deno KV ${what} failed (${detail}); the sender will retry.`, { cause: error })
}
