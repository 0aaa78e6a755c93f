/**
 * The faithful sender: an in-process stand-in for the email service that delivers signed
 * events to receivers exactly as SPEC.md says (10 s timeout, no redirects, exponential
 * backoff over 10 attempts, fresh signature per attempt, endpoint disabled after 10 failures
 * in a row, success resets the counter) and serves the webhook management API and the email
 * read (`GET /emails/{id}`). Its parts: the clock (sender-clock.ts), the delivery loop
 * (sender-delivery.ts), the emails (sender-emails.ts) and the API (sender-api.ts).
 */
import type { WebhookEvent } from '@email-webhooks/core'
import { handleApiRequest, type SenderState } from './sender-api.js'
import { SenderClock } from './sender-clock.js'
import { DeliveryLoop } from './sender-delivery.js'
import { EmailLog } from './sender-emails.js'
import {
  type FaithfulSender,
  type FaithfulSenderOptions,
  SENDER_DISABLE_AFTER,
  SENDER_EMAIL_RETENTION_MS,
  SENDER_INITIAL_BACKOFF_MS,
  SENDER_MAX_ATTEMPTS,
  SENDER_MAX_BACKOFF_MS,
  SENDER_PAYLOAD_LIFETIME_MS,
  SENDER_RECEIVER_TIMEOUT_MS,
  TEST_API_KEY,
} from './sender-types.js'

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24))
  return `whsec_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`
}

/** The sender's clock for these options, with the contract's backoff. */
function createClock(options: FaithfulSenderOptions): SenderClock {
  return new SenderClock({
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    timeScale: options.timeScale ?? 1,
    initialBackoffMs: options.initialBackoffMs ?? SENDER_INITIAL_BACKOFF_MS,
    maxBackoffMs: options.maxBackoffMs ?? SENDER_MAX_BACKOFF_MS,
    reorderWindowMs: options.reorderWindowMs ?? 0,
  })
}

/** The delivery loop for these options, with the contract's defaults. */
function createLoop(options: FaithfulSenderOptions, clock: SenderClock): DeliveryLoop {
  return new DeliveryLoop({
    clock,
    random: options.random ?? Math.random,
    send: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    receiverTimeoutMs: options.receiverTimeoutMs ?? SENDER_RECEIVER_TIMEOUT_MS,
    maxAttempts: options.maxAttempts ?? SENDER_MAX_ATTEMPTS,
    disableAfter: options.disableAfter ?? SENDER_DISABLE_AFTER,
    payloadLifetimeMs: options.payloadLifetimeMs ?? SENDER_PAYLOAD_LIFETIME_MS,
    repeatProbability: options.repeatProbability ?? 0,
    onAttempt: options.onAttempt,
    descriptiveStates: options.states === 'descriptive',
  })
}

/**
 * Creates a faithful sender for tests: "my receiver survives the sender".
 *
 * @param options.timeScale Multiplies backoff waits; default 1 (use 0.001 in tests).
 * @param options.receiverTimeoutMs Receiver timeout; default 10 000 ms.
 * @param options.disableAfter Consecutive failures that disable an endpoint; default 10.
 * @param options.payloadLifetimeMs After this, a retry by hand answers 404 `delivery_expired`; default 3 days.
 * @param options.emailRetentionMs After this from its first event, `GET /emails/{id}` answers 404; default 30 days.
 * @param options.states What delivery records' `state` says: `'documented'` (default: `pending` for every record, as the contract shows), or `'descriptive'` (this sender's own: pending, delivering, succeeded, failed).
 * @throws {TypeError} when a number option is negative or not finite, or `states` is neither `'documented'` nor `'descriptive'`.
 * @example
 * const sender = createFaithfulSender({ timeScale: 0.001 })
 * const { id, secret } = sender.createEndpoint(`http://127.0.0.1:${port}/hooks`)
 * sender.emit({ type: 'email.bounced' })
 * await sender.idle()
 */
export function createFaithfulSender(options: FaithfulSenderOptions = {}): FaithfulSender {
  for (const [name, value] of Object.entries(options)) {
    if (typeof value === 'number' && (!Number.isFinite(value) || value < 0))
      throw new TypeError(`[@email-webhooks/core/testing] ${name} must be a non-negative number.`)
  }
  if (options.states !== undefined && options.states !== 'documented' && options.states !== 'descriptive') {
    throw new TypeError(
      `[@email-webhooks/core/testing] states must be 'documented' (delivery records say pending, as the contract shows) or 'descriptive' (this sender's own states), got ${JSON.stringify(options.states)}.`,
    )
  }
  const clock = createClock(options)
  const loop = createLoop(options, clock)
  const emails = new EmailLog()
  const emailRetentionMs = options.emailRetentionMs ?? SENDER_EMAIL_RETENTION_MS
  const email = (id: string) => emails.get(id, clock.now(), emailRetentionMs)
  const state: SenderState = {
    apiKeys: options.apiKeys ?? { [TEST_API_KEY]: ['webhooks:manage', 'emails:read'] },
    allowLocalUrls: options.allowLocalUrls ?? true,
    faults: [],
    requests: [],
    listEndpoints: () => loop.endpoints(),
    createEndpoint: (url) => loop.addEndpoint(url, randomSecret()),
    setEnabled: (id, enabled) => loop.setEnabled(id, enabled),
    deliveries: (id) => loop.deliveries(id),
    retry: (endpointId, deliveryId) => loop.retry(endpointId, deliveryId),
    email,
  }
  return {
    fetch: (request) => handleApiRequest(state, request),
    createEndpoint: (url, endpointOptions) => loop.addEndpoint(url, endpointOptions?.secret ?? randomSecret()),
    emit(input = {}) {
      const data = input.data ?? { id: crypto.randomUUID() }
      const event: WebhookEvent = input.event ?? {
        id: crypto.randomUUID(),
        type: input.type ?? 'email.queued',
        created_at: new Date(clock.eventTime(data.id)).toISOString(),
        data,
      }
      emails.record(event, clock.now())
      return { event, deliveries: loop.deliver(event) }
    },
    email,
    endpoint: (id) => loop.endpoint(id),
    deliveries: (endpointId) => loop.deliveries(endpointId) ?? [],
    attempts: loop.attempts,
    apiRequests: state.requests,
    injectApiFaults: (...faults) => void state.faults.push(...faults),
    idle: (timeoutMs = 10_000) => loop.idle(timeoutMs),
    close: () => loop.close(),
  }
}
