/**
 * The inbox of `MemoryDedupStore`: a Map of entries in this process. Not durable (a restart
 * forgets every entry); for tests and short-lived processes. A take walks the entries: fine for the
 * few a test holds, not for production queues.
 */
import type { InboxEntry, InboxItem, InboxLease, InboxQueue, InboxState, InboxStats } from '../inbox.js'

interface Entry extends InboxEntry {
  token: string | null
  /** Running: when its lease ends. Done: when it is forgotten. */
  until: number
}

/** Same order key, and older by (createdAtMs, key). */
function before(a: InboxItem, b: InboxItem): boolean {
  const x = a.createdAtMs ?? 0
  const y = b.createdAtMs ?? 0
  return x < y || (x === y && a.key < b.key)
}

/** An in-process inbox. */
export class MemoryInbox implements InboxQueue {
  readonly #entries = new Map<string, Entry>()
  readonly #now: () => number

  constructor(now: () => number) {
    this.#now = now
  }

  enqueue(item: InboxItem, opts: { retentionMs: number }): Promise<'queued' | 'duplicate'> {
    const now = this.#now()
    const held = this.#entries.get(item.key)
    if (held && !(held.state === 'done' && held.until <= now)) return Promise.resolve('duplicate')
    this.#entries.delete(item.key)
    this.#entries.set(item.key, {
      ...copy(item),
      state: 'pending',
      attempts: 0,
      enqueuedAt: now,
      nextAttemptAt: now,
      lastError: null,
      endedAt: null,
      failedAt: null,
      retriedAt: null,
      attemptsBeforeRetry: 0,
      token: null,
      until: now + opts.retentionMs,
    })
    return Promise.resolve('queued')
  }

  take(opts: { leaseMs: number; ordered: boolean }): Promise<InboxLease | undefined> {
    const now = this.#now()
    this.#lapse(now)
    let best: Entry | undefined
    for (const entry of this.#entries.values()) {
      if (entry.state !== 'pending' || entry.nextAttemptAt > now) continue
      if (opts.ordered && entry.orderKey !== undefined && this.#blocked(entry)) continue
      if (!best || entry.nextAttemptAt < best.nextAttemptAt) best = entry
    }
    if (!best) return Promise.resolve(undefined)
    best.state = 'running'
    best.attempts++
    best.token = crypto.randomUUID()
    best.until = now + opts.leaseMs
    return Promise.resolve({ key: best.key, token: best.token, attempt: best.attempts, item: itemOf(best) })
  }

  finish(lease: InboxLease, opts: { retentionMs: number }): Promise<boolean> {
    const entry = this.#held(lease)
    if (!entry) return Promise.resolve(false)
    const now = this.#now()
    Object.assign(entry, { state: 'done', token: null, endedAt: now, until: now + opts.retentionMs })
    return Promise.resolve(true)
  }

  fail(lease: InboxLease, opts: { error: string; retryInMs: number | null }): Promise<boolean> {
    const entry = this.#held(lease)
    if (!entry) return Promise.resolve(false)
    const now = this.#now()
    entry.token = null
    entry.lastError = opts.error
    entry.failedAt = now
    if (opts.retryInMs === null) Object.assign(entry, { state: 'dead', endedAt: now })
    else Object.assign(entry, { state: 'pending', nextAttemptAt: now + opts.retryInMs })
    return Promise.resolve(true)
  }

  defer(lease: InboxLease, opts: { retryInMs: number }): Promise<boolean> {
    const entry = this.#held(lease)
    if (!entry) return Promise.resolve(false)
    Object.assign(entry, { state: 'pending', token: null, attempts: entry.attempts - 1, nextAttemptAt: this.#now() + opts.retryInMs })
    return Promise.resolve(true)
  }

  renew(lease: InboxLease, opts: { leaseMs: number }): Promise<boolean> {
    const entry = this.#held(lease)
    if (!entry) return Promise.resolve(false)
    entry.until = this.#now() + opts.leaseMs
    return Promise.resolve(true)
  }

  list(opts: { state?: InboxState; limit?: number } = {}): Promise<InboxEntry[]> {
    this.#lapse(this.#now())
    const out: InboxEntry[] = []
    for (const entry of this.#entries.values()) {
      if (opts.state !== undefined && entry.state !== opts.state) continue
      if (entry.state === 'done' && entry.until <= this.#now()) continue
      out.push(view(entry))
      if (out.length >= (opts.limit ?? 100)) break
    }
    return Promise.resolve(out)
  }

  get(key: string): Promise<InboxEntry | undefined> {
    this.#lapse(this.#now())
    const entry = this.#entries.get(key)
    return Promise.resolve(entry && !(entry.state === 'done' && entry.until <= this.#now()) ? view(entry) : undefined)
  }

  retry(keys: string[] | 'dead'): Promise<number> {
    const now = this.#now()
    let count = 0
    for (const entry of keys === 'dead' ? this.#entries.values() : keys.map((key) => this.#entries.get(key))) {
      if (entry?.state !== 'dead') continue
      Object.assign(entry, {
        state: 'pending',
        attemptsBeforeRetry: entry.attemptsBeforeRetry + entry.attempts,
        attempts: 0,
        retriedAt: now,
        nextAttemptAt: now,
        endedAt: null,
      })
      count++
    }
    return Promise.resolve(count)
  }

  purge(opts: { olderThanMs: number }): Promise<number> {
    const cutoff = this.#now() - opts.olderThanMs
    let count = 0
    for (const [key, entry] of this.#entries) {
      if (entry.state !== 'dead' || (entry.endedAt ?? 0) > cutoff) continue
      this.#entries.delete(key)
      count++
    }
    return Promise.resolve(count)
  }

  stats(): Promise<InboxStats> {
    this.#lapse(this.#now())
    const stats: InboxStats = { pending: 0, running: 0, dead: 0, oldestPendingAt: null }
    for (const entry of this.#entries.values()) {
      if (entry.state === 'pending') {
        stats.pending++
        if (stats.oldestPendingAt === null || entry.enqueuedAt < stats.oldestPendingAt) stats.oldestPendingAt = entry.enqueuedAt
      } else if (entry.state === 'running') stats.running++
      else if (entry.state === 'dead') stats.dead++
    }
    return Promise.resolve(stats)
  }

  clear(): void {
    this.#entries.clear()
  }

  /** Running entries whose lease ended are pending again (their attempt stays counted); done ones past retention go. */
  #lapse(now: number): void {
    for (const [key, entry] of this.#entries) {
      if (entry.state === 'running' && entry.until <= now) Object.assign(entry, { state: 'pending', token: null, nextAttemptAt: now })
      else if (entry.state === 'done' && entry.until <= now) this.#entries.delete(key)
    }
  }

  /** Another entry of its order key runs, or an older one waits. */
  #blocked(entry: Entry): boolean {
    for (const other of this.#entries.values()) {
      if (other === entry || other.orderKey !== entry.orderKey) continue
      if (other.state === 'running' || (other.state === 'pending' && before(other, entry))) return true
    }
    return false
  }

  #held(lease: InboxLease): Entry | undefined {
    const entry = this.#entries.get(lease.key)
    // A lapsed lease holds nothing, whether or not a read or a take saw it lapse yet.
    return entry && entry.state === 'running' && entry.token === lease.token && entry.until > this.#now() ? entry : undefined
  }
}

function copy(item: InboxItem): InboxItem {
  const out: InboxItem = { key: item.key, type: item.type, payload: item.payload, timestamp: item.timestamp }
  if (item.orderKey !== undefined) out.orderKey = item.orderKey
  if (item.createdAtMs !== undefined) out.createdAtMs = item.createdAtMs
  return out
}

function itemOf(entry: Entry): InboxItem {
  return copy(entry)
}

function view(entry: Entry): InboxEntry {
  const { token: _token, until: _until, ...rest } = entry
  return { ...rest }
}
