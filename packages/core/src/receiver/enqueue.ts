/**
 * Inbox mode's step after the parse: record the verified event in the inbox (or hand it to the
 * sink), within `storeTimeoutMs`, and answer 2xx once it is durable; a duplicate answers as one.
 * The handlers run later, in the worker.
 */
import type { WebhookEvent } from '../events.js'
import type { InboxItem } from '../store/inbox.js'
import type { DeliveryTrace } from '../telemetry/trace.js'
import type { WebhookBody } from '../verify.js'
import { duplicateAnswer, queuedAnswer, storeUnavailable } from './answers.js'
import { attempt } from './deadline.js'
import type { EventOrdering } from './order.js'
import type { Pipeline } from './pipeline.js'
import type { ReceiverResponse } from './types.js'

const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false })

/** The body as text: a string as it is, bytes decoded as `parseEnvelope` decodes them. */
function textOf(body: WebhookBody): string {
  return typeof body === 'string' ? body : decoder.decode(body as Uint8Array | ArrayBuffer)
}

/** Records `event` in the inbox; the answer. */
export async function enqueueEvent<Ctx>(
  p: Pipeline<Ctx>,
  key: string,
  event: WebhookEvent,
  body: WebhookBody,
  timestamp: number,
  ordering: EventOrdering,
  trace?: DeliveryTrace,
): Promise<ReceiverResponse> {
  const inbox = p.inbox
  if (inbox === undefined) throw new Error('enqueueEvent needs inbox mode')
  const item: InboxItem = { key, type: event.type, payload: textOf(body), timestamp }
  const order = ordering.claimOptions.order
  if (order) {
    item.orderKey = order.key
    item.createdAtMs = order.mark.createdAtMs
  }
  const startedAt = performance.now()
  let timedOut = false
  let result: 'queued' | 'duplicate'
  try {
    const enqueuing = attempt(() => inbox.sink.enqueue(item, { retentionMs: p.retentionMs }))
    const pending = trace === undefined ? enqueuing : trace.store('enqueue', enqueuing)
    // The memory store's own inbox answers before the next tick; a sink of the user's may hang.
    const mayHang = p.storeMayHang || inbox.sink !== p.store.inbox
    result = await p.deadlines.within(pending, mayHang ? startedAt + p.storeTimeoutMs : undefined, () => {
      timedOut = true
      return new Error(`inbox enqueue took longer than ${p.storeTimeoutMs} ms`)
    })
  } catch (cause) {
    return p.fail(storeUnavailable(cause, timedOut ? p.storeTimeoutMs : undefined), event, 1000)
  }
  if (result === 'duplicate') {
    p.reporter.duplicates++
    return duplicateAnswer(event)
  }
  p.reporter.queued++
  p.wake?.()
  return queuedAnswer(event)
}
