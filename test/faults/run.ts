/**
 * One scenario's traffic: the testing kit's faithful sender (the contract's 10 attempts, backoff,
 * disable after 10 failures in a row; its backoff compressed by `timeScale`) delivering events
 * emitted at a steady rate to a receiver URL, every answer timed from outside, and the
 * documented recovery once the fault is over and the sender has nothing left to try:
 * recoverEndpoint (re-enable, retry what was not delivered), then reconcileEmails over every
 * emitted event's email (what no delivery record shows: events emitted while the endpoint was
 * disabled, failed deliveries past the 100 the sender lists). Reconcile needs receivers with
 * `ordering: true` (RECONCILABLE).
 */

import type { DedupStore } from '@email-webhooks/core'
import { createWebhooksClient, type ReconcileReport, type RecoveryReport, reconcileEmails, recoverEndpoint } from '@email-webhooks/core/api'
import { createFaithfulSender, type FaithfulSender, listenSender, TEST_API_KEY, TEST_SECRET } from '@email-webhooks/core/testing'

const TYPES = ['email.queued', 'email.submitted', 'email.bounced', 'email.recipient_accepted', 'email.complained'] as const

/** One POST as the sender saw it: when it started (ms on the run's clock), how long the answer took, what it was. */
export interface Answer {
  eventId: string
  at: number
  ms: number
  /** 0: no answer (timeout or network failure). */
  status: number
  /** `error.code` of a non-2xx JSON answer. */
  code: string | undefined
  failure: 'timeout' | 'network' | undefined
}

export interface Emitted {
  id: string
  /** Its email (`data.id`): every event emitted here is of an email of its own. */
  emailId: string
  at: number
  /** Whether the sender created a delivery for it (false: the endpoint was disabled when it was emitted). */
  sent: boolean
}

export interface RunOptions {
  /** Consecutive failed attempts that disable the endpoint; default the contract's 10. */
  disableAfter?: number
  /** Multiplies the sender's backoff (5 s doubling); default 0.02: its 10 attempts span 51 s instead of 42.6 min. */
  timeScale?: number
  /** The sender's receiver timeout in real ms; default the contract's 10 s. */
  receiverTimeoutMs?: number
}

/** Receiver options reconcile needs: facts per email, kept with ordering on (packages/core/src/receiver/facts.ts). */
export const RECONCILABLE = { ordering: true } as const

/** Emails reconcile reads (and whose missing events it POSTs, one email's at a time) at once: bounded, so the receiver is not flooded. */
export const RECONCILE_CONCURRENCY = 8

export interface Run {
  sender: FaithfulSender
  endpointId: string
  /** The sender's attempts. */
  answers: Answer[]
  /** Reconcile's POSTs (kept apart: not the sender's answers, nor in the p99). */
  reconcileAnswers: Answer[]
  /** What reconcile did in `settle`; undefined before, or when it was not run. */
  reconciliation: ReconcileReport | undefined
  emitted: Emitted[]
  /** Named instants on the run's clock (ms since it started). */
  marks: Map<string, number>
  /** Now on the run's clock. */
  now(): number
  mark(name: string): void
  /** Emits `events` events, `perSecond` a second; `data(i)` adds fields to an event's `data`. */
  traffic(events: number, perSecond: number, data?: (i: number) => Record<string, unknown> | undefined): Promise<void>
  /** Recovers the endpoint the documented way (recoverEndpoint) if it is disabled; the report, or undefined when it was enabled. */
  recoverIfDisabled(store?: DedupStore): Promise<RecoveryReport | undefined>
  /**
   * Waits until the sender has nothing left to try; then, while deliveries remain undelivered,
   * recovers the endpoint (`rounds` times, waiting 0.5 s, 1 s, 2 s … before each, as an
   * operator would try again later: a recovery that meets handlers still running gets 409s, and
   * ten of them in a row disable the endpoint again; and on, 8 s apart, until `leaseMs` has passed
   * since the first round: a claim that reached the store while its answer was lost, as a store
   * stopped mid-call can leave, holds its event until its lease ends, and the retries of a recovery
   * meet 409 until then, as the receiver's 503 says); then reconciles every emitted event's email
   * (unless `reconcile` is false), keeping the report in `reconciliation`. `beforeReconcile` runs
   * between the two (an inbox-mode scenario waits there for its inbox to drain).
   */
  settle(options?: {
    store?: DedupStore
    rounds?: number
    /** The receiver's leaseMs (default: its default, 30 s). */
    leaseMs?: number
    idleMs?: number
    reconcile?: boolean
    beforeReconcile?: () => Promise<void>
  }): Promise<RecoveryReport[]>
  close(): Promise<void>
}

/** How a scenario names the sender's disable threshold: the contract's, or one its fault never reaches. */
export function thresholdName(disableAfter: number): string {
  return disableAfter === 10 ? 'sender disables after 10 failures' : 'sender never disables'
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export function startRun(url: string, options: RunOptions = {}): Run {
  const started = performance.now()
  const now = () => performance.now() - started
  const answers: Answer[] = []
  const emitted: Emitted[] = []
  const marks = new Map<string, number>()
  /** A fetch that times every POST and keeps its answer in `into`. */
  const timed =
    (into: Answer[]): typeof fetch =>
    async (input, init) => {
      const at = now()
      const eventId = new Headers(init?.headers).get('webhook-id') ?? ''
      try {
        const response = await fetch(input, init)
        let code: string | undefined
        if (response.status >= 300) {
          try {
            code = (JSON.parse(await response.clone().text()) as { error?: { code?: string } }).error?.code
          } catch {}
        }
        into.push({ eventId, at, ms: now() - at, status: response.status, code, failure: undefined })
        return response
      } catch (error) {
        const failure = init?.signal?.aborted ? 'timeout' : 'network'
        into.push({ eventId, at, ms: now() - at, status: 0, code: undefined, failure })
        throw error
      }
    }
  const reconcileAnswers: Answer[] = []
  const sender = createFaithfulSender({
    timeScale: options.timeScale ?? 0.02,
    receiverTimeoutMs: options.receiverTimeoutMs,
    disableAfter: options.disableAfter,
    fetch: timed(answers),
  })
  const { id: endpointId } = sender.createEndpoint(url, { secret: TEST_SECRET })

  const undelivered = () =>
    sender.deliveries(endpointId).filter((d) => !(d.last_status !== null && d.last_status >= 200 && d.last_status < 300))
  let api: Awaited<ReturnType<typeof listenSender>> | undefined
  const client = async () => {
    api ??= await listenSender(sender)
    return createWebhooksClient({ apiKey: TEST_API_KEY, baseUrl: api.baseUrl })
  }
  const recover = async (store: DedupStore | undefined): Promise<RecoveryReport> =>
    recoverEndpoint({ client: await client(), endpointId, store, spacingMs: 5, concurrency: 8 })

  const run: Run = {
    sender,
    endpointId,
    answers,
    reconcileAnswers,
    reconciliation: undefined,
    emitted,
    marks,
    now,
    mark: (name) => void marks.set(name, now()),
    async traffic(events, perSecond, data) {
      const begun = performance.now()
      for (let i = 0; i < events; i++) {
        const wait = begun + (i * 1000) / perSecond - performance.now()
        if (wait > 0) await sleep(wait)
        const type = TYPES[i % TYPES.length] as string
        const emailId = crypto.randomUUID()
        const { event, deliveries } = sender.emit({ type, data: { id: emailId, ...data?.(i) } })
        emitted.push({ id: event.id, emailId, at: now(), sent: deliveries.length > 0 })
      }
    },
    recoverIfDisabled: async (store) => (sender.endpoint(endpointId)?.enabled ? undefined : recover(store)),
    async settle({ store, rounds = 6, leaseMs = 30_000, idleMs = 90_000, reconcile = true, beforeReconcile } = {}) {
      const reports: RecoveryReport[] = []
      await sender.idle(idleMs)
      // Bounded: `rounds`, then one round every 8 s until a lease has passed (a round itself is bounded by idleMs).
      const leaseOver = performance.now() + leaseMs + 1_000
      for (let round = 0; round < rounds || performance.now() < leaseOver; round++) {
        if (undelivered().length === 0 && sender.endpoint(endpointId)?.enabled) break
        if (round > 0) await sleep(Math.min(8_000, 500 * 2 ** (round - 1)))
        const report = await recover(store)
        reports.push(report)
        await sender.idle(idleMs)
        // Nothing was left to retry: what is undelivered, the store holds as handled.
        if (report.retried.length === 0 && sender.endpoint(endpointId)?.enabled) break
      }
      // RECONCILE: events emitted while the endpoint was disabled have no delivery record, and a
      // failed delivery older than the 100 the sender lists is out of recover's reach: no recover
      // brings them back. Each email's own event list (GET /emails/{id}) has them. Every emitted
      // event's email is reconciled (not only those known to be missing, as an operator who knows
      // the email ids of the incident would): an event the sender's deliveries brought is a
      // duplicate to the receiver (its facts, ordering on), the others are handled, once.
      await beforeReconcile?.()
      if (reconcile) {
        run.mark('reconcile')
        run.reconciliation = await reconcileEmails({
          client: await client(),
          emailIds: emitted.map((e) => e.emailId),
          receiverUrl: url,
          secret: TEST_SECRET,
          concurrency: RECONCILE_CONCURRENCY,
          fetch: timed(reconcileAnswers),
        })
        run.mark('reconciled')
      }
      return reports
    },
    async close() {
      sender.close()
      await api?.close()
    },
  }
  return run
}
