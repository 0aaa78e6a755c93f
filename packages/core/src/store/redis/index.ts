/**
 * `RedisDedupStore`: dedup shared by every instance of an app, in Redis, through ioredis (an
 * optional peer dependency, loaded only by this module). Each operation is one Lua script on one
 * key, so it runs atomically on the server's clock and works on a cluster. Ordering (not on a
 * Cluster client): claim and complete scripts also read and advance the mark key `<prefix>order:<key>`,
 * take and free the order key's lock `<prefix>order-lock:<key>`, and count its facts in
 * `<prefix>order-fact:<key>`. Durability comes from
 * the server: `appendonly yes` with `appendfsync always`, and `maxmemory-policy noeviction`; the
 * store checks these once and refuses a server that would lose completions (or warns once when
 * the server forbids the check). `waitFor` adds `WAIT`/`WAITAOF` after each completion. Inbox:
 * entries under `<prefix>{inbox}:` (inbox.ts), each enqueue as durable as a completion.
 */
// By package name, not './errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import { registerConsoleSource } from '../../console/registry.js'
import type { OrderMark } from '../../ordering/position.js'
import { durationProblem } from '../durations.js'
import { scrub } from '../redact.js'
import { newerSchemaError, WRITTEN_BY } from '../schema-version.js'
import type { Claim, ClaimOptions, ClaimOrder, ClaimResult, CompleteOptions, DedupKeyState, DedupStore, ExtendOptions } from '../types.js'
import { gaveBackLine, UnansweredClaims } from '../unanswered.js'
import { redisConsoleSource } from './console.js'
import { awaitCopies, checkServer, type RedisServer } from './durability.js'
import { classify, PACKAGE, withoutCommand } from './errors.js'
import { INBOX, RedisInbox, SETS } from './inbox.js'
import { INBOX_SCHEMA_SCRIPT } from './inbox-scripts.js'
import { checkDurations, connect, type RedisClient, type RedisDedupStoreOptions, type RedisWaitFor } from './options.js'
import { SCRIPTS, type Script } from './scripts.js'

export { checkRedisDurability, type RedisDurabilityCheckOptions } from './durability.js'
export { DEFAULT_REDIS_PREFIX, type RedisClient, type RedisDedupStoreOptions, type RedisWaitFor } from './options.js'

/**
 * The layout this build writes, stamped at `<prefix>{inbox}:v` (who wrote it at `<prefix>{inbox}:v-by`):
 * 1 is 0.1.0's (no stamp); 2 adds the inbox's `ready` set (what an ordered take may have now), the
 * key of each take's token, and a retried entry's history in its hash. Dedup keys are unchanged.
 */
const REDIS_SCHEMA_VERSION = 2
/** The stamp's keys, after the prefix: in the inbox's slot, so that one script reads, upgrades and stamps. */
const SCHEMA_KEYS = [...SETS, `${INBOX}v`, `${INBOX}v-by`]

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
  /** Claims that got no answer, given back once the server answers (unanswered.ts). */
  readonly #unanswered: UnansweredClaims
  /** The store's inbox (keys under `<prefix>{inbox}:`, one cluster slot), shared by every instance on the server. */
  readonly inbox: RedisInbox
  #checked: Promise<void> | undefined
  /** The durability check passed: later calls skip it (no await per call). */
  #checkPassed = false
  /** The schema stamp read (and the layout upgraded) once: later calls skip it. */
  #schema: Promise<void> | undefined
  #schemaPassed = false
  #closed = false

  constructor(options: RedisDedupStoreOptions) {
    const connection = connect(options)
    this.#client = connection.client
    this.#ownsClient = connection.ownsClient
    this.#prefix = connection.prefix
    this.#target = connection.target
    this.#secret = connection.secret
    this.#checkDurability = connection.checkDurability
    this.#waitFor = connection.waitFor
    this.#warn = connection.warn
    this.#unanswered = new UnansweredClaims(
      (claim) => this.release(claim),
      (claim) => this.#warn(gaveBackLine(PACKAGE, 'RedisDedupStore', claim.key)),
    )
    if ((this.#client as { isCluster?: unknown }).isCluster !== true) this.ordering = true
    this.inbox = new RedisInbox({
      prefix: this.#prefix,
      run: (script, names, ...args) => this.#run(script, names, ...args),
      durable: async () => {
        if (this.#waitFor) await awaitCopies(this.#server(), this.#waitFor, 'an inbox entry')
      },
    })
    // The operator's console reads through scripts of its own (console.ts).
    registerConsoleSource(this, () =>
      redisConsoleSource({
        prefix: this.#prefix,
        location: this.#target.replace(/^Redis at rediss?:\/\/(?:[^@/]*@)?/, ''),
        ordering: this.ordering === true,
        run: (script, names, ...args) => this.#run(script, names, ...args),
      }),
    )
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    checkDurations(opts, true)
    const order = this.ordering ? opts.order : undefined
    // A claim of this store's that got no answer may hold the event (or its email): given back, then claimed again.
    return this.#unanswered.claim(key, order?.key, () => this.#claimOnce(key, opts, order))
  }

  /** One claim script with a token of its own; one that got no answer is kept to give back (unanswered.ts). */
  async #claimOnce(key: string, opts: ClaimOptions, order: ClaimOptions['order']): Promise<ClaimResult> {
    const token = crypto.randomUUID()
    const reply = (await this.#unanswered.send({ key, token, orderKey: order?.key }, opts.leaseMs, () =>
      order
        ? this.#run(SCRIPTS.claimOrder, orderedKeys(key, order.key), token, opts.leaseMs, opts.retentionMs, order.fact ?? '')
        : this.#run(SCRIPTS.claim, [key], token, opts.leaseMs, opts.retentionMs),
    )) as [number, number, ...(string | null | undefined)[]]
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
    if (done && this.#waitFor) await awaitCopies(this.#server(), this.#waitFor)
    return done
  }

  async release(claim: Claim): Promise<boolean> {
    if (claim.orderKey === undefined || !this.ordering) return (await this.#run(SCRIPTS.release, [claim.key], claim.token)) === 1
    return (await this.#run(SCRIPTS.releaseOrder, [claim.key, LOCK_KEY + claim.orderKey], claim.token)) === 1
  }

  /** Renews the claim's lease (and the order key it holds) from now on the server's clock, while its token holds it live. */
  async extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    const problem = durationProblem('leaseMs', opts?.leaseMs)
    if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} RedisDedupStore: ${problem}`)
    if (claim.orderKey === undefined || !this.ordering)
      return (await this.#run(SCRIPTS.extend, [claim.key], claim.token, opts.leaseMs)) === 1
    return (await this.#run(SCRIPTS.extendOrder, [claim.key, LOCK_KEY + claim.orderKey], claim.token, opts.leaseMs)) === 1
  }

  /** What Redis holds for `key` now, on the server's clock: one read-only script. Expired keys are `'absent'`. */
  async lookup(key: string): Promise<DedupKeyState> {
    const state = await this.#run(SCRIPTS.lookup, [key])
    return state === 2 ? 'done' : state === 1 ? 'in_flight' : 'absent'
  }

  /**
   * Whether `claim`'s own complete recorded its key (a complete whose answer was lost, or that a
   * reconnect sent twice): the done record keeps the attempt number of the claim that recorded it,
   * for as long as it is retained. False also for a key recorded by a complete that found its
   * lease gone with a restart (recorded as attempt 1) when the claim's attempt was later.
   */
  async completedBy(claim: Claim): Promise<boolean> {
    return (await this.#run(SCRIPTS.completedBy, [claim.key], claim.attempt)) === 1
  }

  /** Closes the client if the store created it (a given client stays open). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#unanswered.close()
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
    if (this.#checkDurability && !this.#checkPassed) {
      this.#checked ??= checkServer(this.#server()).then(
        () => {
          this.#checkPassed = true
        },
        (error: unknown) => {
          this.#checked = undefined
          throw error
        },
      )
      await this.#checked
    }
    if (!this.#schemaPassed) {
      this.#schema ??= this.#openSchema().then(
        () => {
          this.#schemaPassed = true
        },
        (error: unknown) => {
          this.#schema = undefined
          throw error
        },
      )
      await this.#schema
    }
    return this.#eval(script, names, args)
  }

  /** Runs `script` on the prefixed `names`, loading it once if the server lost it; rejects with a DedupStoreError. */
  async #eval(script: Script, names: string[], args: (string | number)[]): Promise<unknown> {
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

  /**
   * Reads the schema stamp once, before the first call: a newer layout is refused (nothing read or
   * written), an older one (0.1.0 wrote none) is upgraded and stamped in the same script.
   */
  async #openSchema(): Promise<void> {
    const base = this.#prefix + INBOX
    const [found, by] = (await this.#eval(INBOX_SCHEMA_SCRIPT, SCHEMA_KEYS, [base, REDIS_SCHEMA_VERSION, WRITTEN_BY])) as [
      number,
      string | null,
    ]
    const where = `the keys under the prefix ${JSON.stringify(this.#prefix)} on ${this.#target}`
    if (found === -1) {
      throw new DedupStoreError(
        'misconfigured',
        scrub(
          `${PACKAGE} ${where}: ${base}v holds ${JSON.stringify(by)}, not a schema version: another program wrote it. Give this store a prefix of its own.`,
          this.#secret,
        ),
      )
    }
    if (found > REDIS_SCHEMA_VERSION) {
      const error = newerSchemaError(PACKAGE, where, { version: found, writtenBy: by ?? undefined }, REDIS_SCHEMA_VERSION)
      throw new DedupStoreError('misconfigured', scrub(error.message, this.#secret))
    }
  }

  /** What the durability checks need: the client, the server in messages and the error wrapper. */
  #server(): RedisServer {
    return { client: this.#client, target: this.#target, secret: this.#secret, warn: this.#warn, wrap: (error) => this.#wrap(error) }
  }

  #wrap(error: unknown): DedupStoreError {
    const { code, message } = classify(error, this.#target)
    return new DedupStoreError(code, scrub(`${PACKAGE} ${message}`, this.#secret), { cause: withoutCommand(error) })
  }
}
