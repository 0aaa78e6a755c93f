/**
 * The inbox of `RedisDedupStore` (`store.inbox`): each entry a hash `<prefix>{inbox}:entry:<key>`,
 * found through sorted sets `<prefix>{inbox}:pending` (by due time), `:running` (by lease end),
 * `:dead` (by when it died), `:done` (by when it is forgotten), `:age` (pending ones by when they
 * were recorded) and `:ready` (what an ordered take may have now: each email's head, and the
 * entries without an email), and per order key `<prefix>{inbox}:order:<order key>` (its unfinished
 * entries, oldest first), `:order-run:<order key>` (its running ones) and `:head:<order key>`. Each call is one Lua script
 * (inbox-scripts.ts) on the server's clock, so concurrent takes from any number of processes never
 * hold one entry, and a take first makes lapsed leases pending again. An enqueue goes through the
 * completions' durability path: the server checked for `appendfsync always` once, then `waitFor`'s
 * WAIT/WAITAOF. A done entry's hash expires with its retention (PEXPIRE). The hash tag `{inbox}`
 * puts every inbox key in one slot, so the inbox works on a Cluster client too (on one shard); a
 * `prefix` with its own `{…}` tag keeps them together as well, but one holding an empty `{}` does not.
 */
// By package name, not './errors.js': this subpath is bundled on its own (see index.ts).
import { DedupStoreError } from '@email-webhooks/core'
import { inBatches } from '../chunked.js'
import { inboxDurationProblem } from '../durations.js'
import type { InboxEntry, InboxItem, InboxLease, InboxQueue, InboxState, InboxStats } from '../inbox.js'
import { PACKAGE } from './errors.js'
import { INBOX_SCRIPTS } from './inbox-scripts.js'
import type { Script } from './scripts.js'

/** Where the inbox's keys live, after the store's prefix (a hash tag: one cluster slot). */
export const INBOX = '{inbox}:'
/** The sorted sets every inbox script gets as KEYS, in the order the scripts read them. */
export const SETS: string[] = ['pending', 'running', 'dead', 'done', 'age', 'ready'].map((name) => INBOX + name)
/** How many dead entries one retry or purge script handles; the inbox runs it again until fewer come back. */
const BATCH = 1_000

/** What the inbox needs of its store. */
export interface RedisInboxHost {
  prefix: string
  /** Runs `script` on the prefixed `names` (checking the server's durability once); rejects with the store's `DedupStoreError`. */
  run(script: Script, names: string[], ...args: (string | number)[]): Promise<unknown>
  /** Resolves once a write of this connection has the copies the store's `waitFor` asks for. */
  durable(): Promise<void>
}

type Reply = string | number | null

function itemOf(key: string, type: Reply, payload: Reply, ts: Reply, orderKey: Reply, createdAtMs: Reply): InboxItem {
  const item: InboxItem = { key, type: String(type), payload: String(payload), timestamp: Number(ts) }
  if (orderKey !== null) item.orderKey = String(orderKey)
  if (createdAtMs !== null) item.createdAtMs = Number(createdAtMs)
  return item
}

/** An entry from its hash's fields and values, as HGETALL gives them. */
function entryOf(key: string, pairs: string[]): InboxEntry {
  const f = new Map<string, string>()
  for (let i = 0; i + 1 < pairs.length; i += 2) f.set(pairs[i] as string, pairs[i + 1] as string)
  const get = (name: string) => f.get(name) ?? null
  return {
    ...itemOf(key, get('type'), get('payload'), get('ts'), get('ok'), get('cms')),
    state: get('state') as InboxState,
    attempts: Number(get('att')),
    enqueuedAt: Number(get('enq')),
    nextAttemptAt: Number(get('next')),
    lastError: get('err'),
    endedAt: f.has('ended') ? Number(f.get('ended')) : null,
    failedAt: f.has('fat') ? Number(f.get('fat')) : null,
    retriedAt: f.has('rat') ? Number(f.get('rat')) : null,
    attemptsBeforeRetry: Number(f.get('ratt') ?? 0),
  }
}

/** The inbox of a Redis store. */
export class RedisInbox implements InboxQueue {
  readonly #host: RedisInboxHost
  /** The base of the keys the scripts build (entries, order keys): the prefix and the hash tag. */
  readonly #base: string

  constructor(host: RedisInboxHost) {
    this.#host = host
    this.#base = host.prefix + INBOX
  }

  async enqueue(item: InboxItem, opts: { retentionMs: number }): Promise<'queued' | 'duplicate'> {
    this.#check(opts)
    const { key, type, payload, timestamp } = item
    const order = item.orderKey === undefined ? ['', ''] : [item.orderKey, item.createdAtMs ?? '']
    const queued = (await this.#run(INBOX_SCRIPTS.enqueue, key, type, payload, timestamp, ...order)) === 1
    if (!queued) return 'duplicate'
    await this.#host.durable()
    return 'queued'
  }

  async take(opts: { leaseMs: number; ordered: boolean }): Promise<InboxLease | undefined> {
    this.#check({ leaseMs: opts.leaseMs })
    const token = crypto.randomUUID()
    const reply = (await this.#run(INBOX_SCRIPTS.take, token, opts.leaseMs, opts.ordered ? '1' : '0')) as Reply[] | null
    if (!reply) return undefined
    const [key, attempt, type, payload, ts, orderKey, createdAtMs] = reply
    const item = itemOf(String(key), type ?? null, payload ?? null, ts ?? null, orderKey ?? null, createdAtMs ?? null)
    return { key: item.key, token, attempt: Number(attempt), item }
  }

  async finish(lease: InboxLease, opts: { retentionMs: number }): Promise<boolean> {
    this.#check(opts)
    return (await this.#run(INBOX_SCRIPTS.finish, lease.key, lease.token, opts.retentionMs)) === 1
  }

  async fail(lease: InboxLease, opts: { error: string; retryInMs: number | null }): Promise<boolean> {
    this.#check({ retryInMs: opts.retryInMs })
    return (await this.#run(INBOX_SCRIPTS.fail, lease.key, lease.token, String(opts.error), opts.retryInMs ?? '')) === 1
  }

  async defer(lease: InboxLease, opts: { retryInMs: number }): Promise<boolean> {
    this.#check(opts)
    return (await this.#run(INBOX_SCRIPTS.defer, lease.key, lease.token, opts.retryInMs)) === 1
  }

  async renew(lease: InboxLease, opts: { leaseMs: number }): Promise<boolean> {
    this.#check(opts)
    return (await this.#run(INBOX_SCRIPTS.renew, lease.key, lease.token, opts.leaseMs)) === 1
  }

  async list(opts: { state?: InboxState; limit?: number } = {}): Promise<InboxEntry[]> {
    const limit = opts.limit ?? 100
    if (!Number.isSafeInteger(limit) || limit < 1) throw this.#invalid(`limit must be a whole number ≥ 1, got ${String(limit)}.`)
    const reply = (await this.#run(INBOX_SCRIPTS.list, opts.state ?? '', limit)) as (string | string[])[]
    const entries: InboxEntry[] = []
    for (let i = 0; i + 1 < reply.length; i += 2) entries.push(entryOf(reply[i] as string, reply[i + 1] as string[]))
    return entries
  }

  async get(key: string): Promise<InboxEntry | undefined> {
    const pairs = (await this.#run(INBOX_SCRIPTS.get, key)) as string[]
    return pairs.length > 0 ? entryOf(key, pairs) : undefined
  }

  async retry(keys: string[] | 'dead'): Promise<number> {
    if (keys !== 'dead') return keys.length === 0 ? 0 : Number(await this.#run(INBOX_SCRIPTS.retry, '0', ...keys))
    return this.#batches('retried', () => this.#run(INBOX_SCRIPTS.retry, '1'))
  }

  async purge(opts: { olderThanMs: number }): Promise<number> {
    this.#check(opts)
    return this.#batches('purged', () => this.#run(INBOX_SCRIPTS.purge, opts.olderThanMs))
  }

  async stats(): Promise<InboxStats> {
    const [pending, running, dead, oldest] = (await this.#run(INBOX_SCRIPTS.stats)) as Reply[]
    return {
      pending: Number(pending),
      running: Number(running),
      dead: Number(dead),
      oldestPendingAt: oldest === null || oldest === undefined ? null : Number(oldest),
    }
  }

  /** Runs a batch script until it handles fewer than a batch; the total. */
  async #batches(what: 'retried' | 'purged', step: () => Promise<unknown>): Promise<number> {
    return inBatches(what, async () => {
      const n = Number(await step())
      return { changed: n, more: n >= BATCH }
    })
  }

  #run(script: Script, ...args: (string | number)[]): Promise<unknown> {
    return this.#host.run(script, SETS, this.#base, ...args)
  }

  #check(opts: Parameters<typeof inboxDurationProblem>[0]): void {
    const problem = inboxDurationProblem(opts)
    if (problem) throw this.#invalid(problem)
  }

  #invalid(problem: string): DedupStoreError {
    return new DedupStoreError('invalid_options', `${PACKAGE} RedisDedupStore inbox: ${problem}`)
  }
}
