/**
 * The inbox worker: takes due entries from the store's inbox and runs them through the receiver's
 * own path, from the claim on (claim.ts, handle.ts: dedup, ordering, facts, the handler deadline,
 * the settle), with the inbox's longer deadlines. An entry is finished once its event is recorded as
 * done; a failed handler makes it pending again after a backoff (doubling, with jitter) and dead
 * after `maxAttempts`; an event held elsewhere (in flight, its email busy, the store down) is
 * deferred without counting an attempt. Timers are unref'd: an idle worker keeps no process alive.
 * An entry recorded under another namespace is given up at once, with a message naming both.
 */
import { PACKAGE, WebhookVerificationError } from '../errors.js'
import { parseEnvelope, type WebhookEvent } from '../events.js'
import type { InboxLease, InboxQueue } from '../store/inbox.js'
import type { DeliveryTrace } from '../telemetry/trace.js'
import { unref } from '../timers.js'
import { claimKey } from './claim.js'
import { handleClaimed } from './handle.js'
import { renewClaimWhileHeld, type StopBeat, startHeartbeat } from './heartbeat.js'
import { LEASE_MARGIN_MS, type ResolvedInbox } from './inbox-options.js'
import { orderingOf } from './order.js'
import type { Pipeline } from './pipeline.js'
import type { HandlerContext, InboxDeadLetter, InboxWorkCounts, InboxWorkResult, ReceiverResponse } from './types.js'

/** Takes the wait for an entry's finish, when the loop does not wait for it. */
type Later = ((finish: Promise<unknown>, result: 'handled' | 'duplicate') => void) | undefined

/** How long an entry whose event is held elsewhere waits before it is taken again. */
const DEFER_MS = 1_000

/** The message of a failure, for the entry's last error (never a payload). */
function messageOf(answer: ReceiverResponse): string {
  const cause = answer.cause
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`
  if (cause !== undefined) return String(cause)
  return answer.code ?? `status ${answer.status}`
}

/** One receiver's inbox worker. */
export class InboxWorker {
  readonly #p: Pipeline<HandlerContext>
  readonly #queue: InboxQueue
  readonly #inbox: ResolvedInbox
  #running = false
  #loops: Promise<void>[] = []
  /** Ends the waits of idle loops (a new entry, or stop). */
  #wakers = new Set<() => void>()
  /** The store failed at the last take: said once until a take succeeds again. */
  #paused = false
  /** Entries this worker holds now (taken, not yet finished, failed or deferred). */
  #held = 0
  /**
   * Finishes the loops sent without waiting for their answers: a loop's next take goes out beside
   * its last finish (on Redis one round trip and one fsync for both, on PostgreSQL two connections
   * at once), so an entry costs the store three waits (take, claim, complete), not four. `stop()`
   * and `drain()` wait for them; `work()` called by hand still resolves after its finish.
   */
  readonly #settling = new Set<Promise<void>>()
  readonly #counts: InboxWorkCounts = { handled: 0, duplicate: 0, retry: 0, dead: 0, deferred: 0 }
  readonly #onDeadLetter: ((letter: InboxDeadLetter) => void) | undefined

  /**
   * @param p The worker's pipeline: the receiver's, with the inbox's deadlines and its reporter.
   * @param onDeadLetter Observes every dead letter; when given, the reporter writes no line about them.
   */
  constructor(p: Pipeline<HandlerContext>, queue: InboxQueue, inbox: ResolvedInbox, onDeadLetter?: (letter: InboxDeadLetter) => void) {
    this.#p = p
    this.#queue = queue
    this.#inbox = inbox
    this.#onDeadLetter = onDeadLetter
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    this.#loops = Array.from({ length: this.#inbox.concurrency }, () => this.#loop())
  }

  async stop(): Promise<void> {
    this.#running = false
    this.wake()
    await Promise.all(this.#loops)
    await this.#settled()
    this.#loops = []
    // Dead letters counted but not yet said would wait for a minute this process may not have.
    this.#p.reporter.flushDeadLetters()
  }

  /**
   * Handles what is due now, `concurrency` entries at a time, and resolves once nothing is due (an
   * entry whose retry time has not come waits for a later run); `stop()` ends it early.
   */
  async drain(): Promise<void> {
    if (this.#running) throw new TypeError(`${PACKAGE} drain() needs a stopped worker: this one is running (start()).`)
    this.#running = true
    const loop = async (): Promise<void> => {
      while (this.#running && (await this.#work(true).catch(() => 'idle' as const)) !== 'idle') {}
    }
    this.#loops = Array.from({ length: this.#inbox.concurrency }, loop)
    try {
      await Promise.all(this.#loops)
      await this.#settled()
    } finally {
      this.#running = false
      this.#loops = []
      this.#p.reporter.flushDeadLetters()
    }
  }

  /** How many entries this worker holds now. */
  running(): number {
    return this.#held
  }

  /** What `work()` did since the worker was built, by result (idle steps not counted). */
  counts(): InboxWorkCounts {
    return { ...this.#counts }
  }

  /** Ends every idle wait now. */
  wake(): void {
    for (const waker of this.#wakers) waker()
  }

  work(): Promise<InboxWorkResult> {
    return this.#work(false)
  }

  /** Resolves once every finish sent by the loops has its answer. */
  async #settled(): Promise<void> {
    while (this.#settling.size > 0) await Promise.all(this.#settling)
  }

  /**
   * Takes one due entry and runs it; with `overlap`, its finish is sent and not waited for (the
   * entry is counted, and no longer held, once the answer has come).
   */
  async #work(overlap: boolean): Promise<InboxWorkResult> {
    let lease = await this.#take()
    // Nothing due while finishes are on their way: one of them may free the next entry of its email
    // (a take on another connection can run before it), so wait for them and look again, unless
    // stop() came meanwhile.
    while (lease === undefined && overlap && this.#settling.size > 0) {
      await this.#settled()
      if (!this.#running) break
      lease = await this.#take()
    }
    if (!lease) return 'idle'
    this.#held++
    const takenAt = performance.now()
    const queue = this.#queue
    const { leaseMs } = this.#inbox
    const stopBeat = this.#beat(takenAt, () => queue.renew(lease, { leaseMs }))
    let result: Exclude<InboxWorkResult, 'idle'>
    let sent = false
    // The finish's answer is waited for by the settling set: the entry is counted, and no longer
    // held, once it has come.
    const later: Later = overlap
      ? (finish, counted) => {
          sent = true
          const settling: Promise<void> = finish.then(() => {
            this.#held--
            this.#counts[counted]++
            this.#settling.delete(settling)
          })
          this.#settling.add(settling)
        }
      : undefined
    try {
      result = await this.#handle(lease, takenAt, later)
    } finally {
      stopBeat?.()
      if (!sent) this.#held--
    }
    if (!sent) this.#counts[result]++
    return result
  }

  /** Takes a due entry: undefined when none is due, null when the store failed (said once until a take succeeds). */
  async #take(): Promise<InboxLease | undefined | null> {
    const p = this.#p
    let lease: InboxLease | undefined
    try {
      lease = await this.#queue.take({ leaseMs: this.#inbox.leaseMs, ordered: p.ordering === 'on' })
    } catch (error) {
      if (!this.#paused) p.reporter.inboxPaused(error)
      this.#paused = true
      return null
    }
    if (this.#paused) p.reporter.inboxResumed()
    this.#paused = false
    return lease
  }

  async #handle(lease: InboxLease, takenAt: number, later: Later): Promise<Exclude<InboxWorkResult, 'idle'>> {
    const p = this.#p
    const prefix = `${p.namespace}:`
    if (!lease.key.startsWith(prefix)) {
      const why = `recorded under another namespace than this worker's ("${p.namespace}"): run the worker with the receiver's namespace, then retry the dead entries`
      return this.#fail(lease, `${why} (key ${lease.key})`, true)
    }
    const id = lease.key.slice(prefix.length)
    let event: WebhookEvent
    try {
      event = parseEnvelope(lease.item.payload, id)
    } catch (error) {
      const why = error instanceof WebhookVerificationError ? error.message : String(error)
      return this.#fail(lease, `the recorded payload is not an event envelope: ${why}`, true)
    }
    const trace = p.telemetry?.process(lease.item.type, lease.attempt)
    const { result, answer } = await this.#run(lease, event, id, trace, takenAt, later)
    trace?.endEntry(result, answer)
    return result
  }

  /** Claims and handles a taken entry's event: what became of it, and the receiver's answer. */
  async #run(
    lease: InboxLease,
    event: WebhookEvent,
    id: string,
    trace: DeliveryTrace | undefined,
    takenAt: number,
    later: Later,
  ): Promise<{ result: Exclude<InboxWorkResult, 'idle'>; answer: ReceiverResponse }> {
    const p = this.#p
    const claimed = await claimKey(p, lease.key, event, orderingOf(p, event), trace)
    if (!('claim' in claimed)) {
      const result = claimed.outcome === 'duplicate' ? await this.#finish(lease, 'duplicate', later) : await this.#defer(lease)
      return { result, answer: claimed }
    }
    // The event's claim is renewed until it is settled: by the handler's end, or later by a late
    // settle (a handler past its deadline, a complete tried again), which then calls `settle`.
    if (this.#inbox.heartbeat) renewClaimWhileHeld(p, claimed, takenAt + this.#inbox.handlerTimeoutMs + LEASE_MARGIN_MS)
    const answer = await handleClaimed(p, lease.key, claimed, event, { id, timestamp: lease.item.timestamp }, undefined)
    let result: Exclude<InboxWorkResult, 'idle'>
    if (answer.status < 300) result = await this.#finish(lease, answer.outcome === 'duplicate' ? 'duplicate' : 'handled', later)
    else if (answer.code === 'handler_failed' || answer.code === 'handler_timeout')
      result = await this.#fail(lease, messageOf(answer), false, answer.cause ?? messageOf(answer))
    else if (answer.code === 'reconcile_unsupported') result = await this.#fail(lease, messageOf(answer), true)
    // Recorded in the background, taken over, or held: the entry waits; its attempt is given back.
    else result = await this.#defer(lease)
    return { result, answer }
  }

  /**
   * Renews a lease of this worker's while its work runs (heartbeat.ts), when the store can: every
   * third of the lease, for at most the handler's deadline and a minute from the take.
   */
  #beat(takenAt: number, renew: () => Promise<boolean>): StopBeat | undefined {
    const { heartbeat, leaseMs, handlerTimeoutMs } = this.#inbox
    if (!heartbeat) return undefined
    return startHeartbeat({
      everyMs: Math.floor(leaseMs / 3),
      untilMs: takenAt + handlerTimeoutMs + LEASE_MARGIN_MS,
      timeoutMs: this.#p.storeTimeoutMs,
      renew,
    })
  }

  async #loop(): Promise<void> {
    while (this.#running) {
      const result = await this.#work(true).catch(() => 'idle' as const)
      if (result === 'idle' && this.#running) await this.#sleep(this.#inbox.pollMs)
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.#wakers.delete(done)
        resolve()
      }
      const timer = unref(setTimeout(done, ms))
      this.#wakers.add(done)
    })
  }

  /** Finishes the entry: waits for the store's answer, or with `later` hands that wait to the caller. */
  async #finish(lease: InboxLease, result: 'handled' | 'duplicate', later: Later): Promise<'handled' | 'duplicate'> {
    // At most one finish a loop on its way: a store slower to finish than to run entries is waited for.
    while (later && this.#settling.size >= this.#inbox.concurrency) await Promise.race(this.#settling)
    const finished = this.#queue.finish(lease, { retentionMs: this.#p.retentionMs }).catch(() => false)
    if (later) later(finished, result)
    else await finished
    return result
  }

  async #defer(lease: InboxLease): Promise<'deferred'> {
    await this.#queue.defer(lease, { retryInMs: DEFER_MS }).catch(() => false)
    return 'deferred'
  }

  /**
   * A failed attempt: pending again after the backoff (said as the worker's attempt, with `cause`,
   * the handler's error), or dead after the last attempt (or when it can never run).
   */
  async #fail(lease: InboxLease, error: string, never: boolean, cause?: unknown): Promise<'retry' | 'dead'> {
    const { maxAttempts, retryBaseMs, retryMaxMs } = this.#inbox
    const dead = never || lease.attempt >= maxAttempts
    // Equal jitter: half the exponential wait, plus up to as much again at random.
    const wait = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(lease.attempt - 1, 30))
    const retryInMs = dead ? null : Math.ceil(wait / 2 + Math.random() * (wait / 2))
    const failed = await this.#queue.fail(lease, { error, retryInMs }).catch(() => false)
    if (dead && failed) this.#deadLetter(lease, error)
    else if (retryInMs !== null && failed && cause !== undefined) {
      const attempt = { number: lease.attempt, of: maxAttempts, retryInMs }
      this.#p.reporter.inboxAttemptFailed({ status: 500, eventId: this.#eventId(lease), type: lease.item.type }, attempt, cause)
    }
    return dead ? 'dead' : 'retry'
  }

  /** The entry's event id: its key without this worker's namespace. */
  #eventId(lease: InboxLease): string {
    const prefix = `${this.#p.namespace}:`
    return lease.key.startsWith(prefix) ? lease.key.slice(prefix.length) : lease.key
  }

  /** Counts a dead letter, and says it: to `onDeadLetter` when given, else through the reporter (every one, rate-limited per type). */
  #deadLetter(lease: InboxLease, error: string): void {
    const eventId = this.#eventId(lease)
    const observer = this.#onDeadLetter
    this.#p.reporter.deadLetter({ status: 500, eventId, type: lease.item.type }, lease.attempt, error, observer !== undefined)
    if (!observer) return
    try {
      observer({ key: lease.key, eventId, type: lease.item.type, attempts: lease.attempt, error })
    } catch {
      // An observer only observes: what it throws must not stop the worker.
    }
  }
}
