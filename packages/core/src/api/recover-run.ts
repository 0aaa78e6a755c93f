/**
 * The retries of a recovery: started in the plan's order (oldest first), at most `concurrency` at
 * once, their starts at least `spacingMs` apart. An abort starts nothing more: the waits between
 * starts end at once, retries in flight are abandoned (`interrupted`: the service may have
 * requeued them) and the rest are reported `notStarted`.
 */
import type { CallOptions, WebhookDelivery, WebhooksClient } from './client.js'
import { EmailApiError } from './errors.js'
import type { RetryItem } from './recover-plan.js'
import type { RecoveryReport } from './recover-report.js'

/** How the retries run. */
export interface RetryRun {
  client: WebhooksClient
  endpointId: string
  concurrency: number
  spacingMs: number
  signal: AbortSignal | undefined
}

/** Waits `ms`, or rejects with the abort reason as soon as `signal` aborts. */
function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** A gate that lets each caller start at least `spacingMs` after the previous one, in call order. */
function spacingGate(spacingMs: number, signal: AbortSignal | undefined): () => Promise<void> {
  let lastStart = Number.NEGATIVE_INFINITY
  let gate: Promise<void> = Promise.resolve()
  return () => {
    const mine = gate.then(async () => {
      // Timers may fire a little early: wait until the gap has really passed.
      for (let left = lastStart + spacingMs - performance.now(); left > 0; left = lastStart + spacingMs - performance.now())
        await wait(Math.ceil(left), signal)
      if (signal?.aborted) throw signal.reason
      lastStart = performance.now()
    })
    gate = mine.catch(() => {})
    return mine
  }
}

/**
 * Runs the retries of `queue`, recording each outcome in `report`; resolves once none is running.
 * @param run The client, the endpoint, the pacing and the signal.
 * @param queue The deliveries to retry, in order, each with the sender's own next attempt when its record shows one.
 * @param report Where outcomes go (`retried`, `expired`, `failed`, `interrupted`, `notStarted`).
 * @throws What the client throws that is not an `EmailApiError` nor the abort.
 * @example
 * await runRetries({ client, endpointId, concurrency: 4, spacingMs: 100, signal }, plan.toRetry, report)
 */
export async function runRetries(run: RetryRun, queue: readonly RetryItem[], report: RecoveryReport): Promise<void> {
  const { client, endpointId, signal } = run
  const call: CallOptions = signal ? { signal } : {}
  const reserveStart = spacingGate(run.spacingMs, signal)
  const itemOf = (d: WebhookDelivery) => ({ deliveryId: d.id, eventId: d.event_id, requestId: report.listRequestId })
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < queue.length && !signal?.aborted) {
      const { delivery: d, senderNext } = queue[next++] as RetryItem
      try {
        await reserveStart()
      } catch (error) {
        if (!signal?.aborted) throw error
        report.notStarted.push(itemOf(d))
        return
      }
      try {
        const { requestId } = await client.retryDelivery(endpointId, d.id, call)
        report.retried.push(senderNext === undefined ? { ...itemOf(d), requestId } : { ...itemOf(d), requestId, senderNext })
      } catch (error) {
        if (!(error instanceof EmailApiError)) {
          if (!signal?.aborted) throw error
          report.interrupted.push(itemOf(d))
          return
        }
        const item = { ...itemOf(d), requestId: error.requestId }
        if (error.code === 'delivery_expired') report.expired.push(item)
        else report.failed.push({ ...item, status: error.status, code: error.code, message: error.message })
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(run.concurrency, queue.length) }, worker))
  for (const { delivery } of queue.slice(next)) report.notStarted.push(itemOf(delivery))
}
