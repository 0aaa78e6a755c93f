/**
 * The faithful sender: an in-process stand-in for the email service that delivers signed
 * events to receivers exactly as SPEC.md says (10 s timeout, no redirects, exponential
 * backoff over 10 attempts, fresh signature per attempt, endpoint disabled after 10 failures
 * in a row, success resets the counter) and serves the webhook management API.
 */
import { signWebhook, type WebhookEvent } from '@email-webhooks/core'
import { handleApiRequest, type SenderState } from './sender-api.js'
import {
  type FaithfulSender,
  type FaithfulSenderOptions,
  SENDER_DISABLE_AFTER,
  SENDER_INITIAL_BACKOFF_MS,
  SENDER_MAX_ATTEMPTS,
  SENDER_MAX_BACKOFF_MS,
  SENDER_PAYLOAD_LIFETIME_MS,
  SENDER_RECEIVER_TIMEOUT_MS,
  type SenderAttempt,
  type SenderDelivery,
  type SenderEndpoint,
  TEST_API_KEY,
} from './sender-types.js'

interface Endpoint extends SenderEndpoint {
  secret: string
}

interface Delivery {
  id: string
  endpointId: string
  event: WebhookEvent
  body: string
  createdAtMs: number
  state: SenderDelivery['state']
  attempts: number
  roundAttempts: number
  lastStatus: number | null
  nextAttemptAtMs: number | null
  timer: ReturnType<typeof setTimeout> | undefined
}

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24))
  return `whsec_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`
}

/**
 * Creates a faithful sender for tests: "my receiver survives the sender".
 *
 * @param options.timeScale Multiplies backoff waits; default 1 (use 0.001 in tests).
 * @param options.receiverTimeoutMs Receiver timeout; default 10 000 ms.
 * @param options.disableAfter Consecutive failures that disable an endpoint; default 10.
 * @param options.payloadLifetimeMs After this, a retry by hand answers 404 `delivery_expired`; default 3 days.
 * @throws {TypeError} when a number option is negative or not finite.
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
  const now = options.now ?? Date.now
  const random = options.random ?? Math.random
  const send = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const timeScale = options.timeScale ?? 1
  const receiverTimeoutMs = options.receiverTimeoutMs ?? SENDER_RECEIVER_TIMEOUT_MS
  const maxAttempts = options.maxAttempts ?? SENDER_MAX_ATTEMPTS
  const disableAfter = options.disableAfter ?? SENDER_DISABLE_AFTER
  const initialBackoffMs = options.initialBackoffMs ?? SENDER_INITIAL_BACKOFF_MS
  const maxBackoffMs = options.maxBackoffMs ?? SENDER_MAX_BACKOFF_MS
  const endpoints = new Map<string, Endpoint>()
  const deliveries = new Map<string, Delivery>()
  const attempts: SenderAttempt[] = []
  const inFlight = new Set<AbortController>()
  let closed = false
  let running = 0
  let idleWaiters: Array<() => void> = []

  const busy = (): boolean => running > 0 || [...deliveries.values()].some((d) => d.timer !== undefined)
  const checkIdle = (): void => {
    if (busy()) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const w of waiters) w()
  }
  const view = (d: Delivery): SenderDelivery => ({
    id: d.id,
    event_id: d.event.id,
    state: d.state,
    attempts: d.attempts,
    last_status: d.lastStatus,
    next_attempt_at: d.nextAttemptAtMs === null ? null : new Date(d.nextAttemptAtMs).toISOString(),
  })
  const endpointView = (e: Endpoint): SenderEndpoint => ({
    id: e.id,
    url: e.url,
    enabled: e.enabled,
    failures: e.failures,
    created_at: e.created_at,
  })

  const schedule = (d: Delivery, delayMs: number): void => {
    if (closed) return
    clearTimeout(d.timer)
    d.state = 'pending'
    d.nextAttemptAtMs = now() + delayMs
    d.timer = setTimeout(() => {
      d.timer = undefined
      void attempt(d)
    }, delayMs)
  }

  const disable = (e: Endpoint): void => {
    e.enabled = false
    for (const d of deliveries.values()) {
      if (d.endpointId !== e.id || d.timer === undefined) continue
      clearTimeout(d.timer)
      d.timer = undefined
      d.state = 'failed'
      d.nextAttemptAtMs = null
    }
  }

  /** One POST, freshly signed; resolves to the attempt record. */
  const post = async (d: Delivery, e: Endpoint, attemptNo: number, repeat: boolean): Promise<SenderAttempt> => {
    const signed = await signWebhook({ secret: e.secret, body: d.body, id: d.event.id, timestamp: Math.floor(now() / 1000) })
    const controller = new AbortController()
    inFlight.add(controller)
    const timer = setTimeout(() => controller.abort(), receiverTimeoutMs)
    const record: SenderAttempt = {
      endpointId: e.id,
      deliveryId: d.id,
      eventId: d.event.id,
      attempt: attemptNo,
      timestamp: signed.headers['webhook-timestamp'] as string,
      signature: signed.headers['webhook-signature'] as string,
      status: 0,
      ok: false,
      repeat,
    }
    try {
      const sent = send(e.url, { method: 'POST', headers: signed.headers, body: d.body, redirect: 'manual', signal: controller.signal })
      // The timeout holds even for an injected fetch that ignores its signal.
      const aborted = new Promise<never>((_, reject) => {
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })
      })
      aborted.catch(() => {})
      sent.catch(() => {})
      const response = await Promise.race([sent, aborted])
      await response.body?.cancel().catch(() => {})
      record.status = response.status
      record.ok = response.status >= 200 && response.status < 300
      if (!record.ok) record.failure = response.status >= 300 && response.status < 400 ? 'redirect' : 'status'
    } catch {
      record.failure = controller.signal.aborted ? 'timeout' : 'network'
    } finally {
      clearTimeout(timer)
      inFlight.delete(controller)
    }
    attempts.push(record)
    options.onAttempt?.(record)
    return record
  }

  const attempt = async (d: Delivery): Promise<void> => {
    running++
    try {
      await attemptOnce(d)
    } finally {
      running--
      checkIdle()
    }
  }

  const attemptOnce = async (d: Delivery): Promise<void> => {
    const e = endpoints.get(d.endpointId)
    if (!e || closed) return
    if (!e.enabled) {
      d.state = 'failed'
      d.nextAttemptAtMs = null
      return
    }
    d.state = 'delivering'
    d.nextAttemptAtMs = null
    d.attempts++
    d.roundAttempts++
    const record = await post(d, e, d.attempts, false)
    d.lastStatus = record.status === 0 ? null : record.status
    if (record.ok) {
      d.state = 'succeeded'
      e.failures = 0
      const p = options.repeatProbability ?? 0
      if (p > 0 && random() < p) await post(d, e, d.attempts, true)
    } else {
      e.failures++
      if (e.enabled && e.failures >= disableAfter) disable(e)
      if (!e.enabled || d.roundAttempts >= maxAttempts) d.state = 'failed'
      else schedule(d, Math.min(maxBackoffMs, initialBackoffMs * 2 ** (d.roundAttempts - 1)) * timeScale)
    }
  }

  const requeue = (d: Delivery, initialDelayMs: number): void => {
    d.roundAttempts = 0
    const e = endpoints.get(d.endpointId)
    if (e?.enabled) schedule(d, initialDelayMs)
    else {
      d.state = 'pending'
      d.nextAttemptAtMs = null
    }
  }

  const state: SenderState = {
    apiKeys: options.apiKeys ?? { [TEST_API_KEY]: ['webhooks:manage'] },
    allowLocalUrls: options.allowLocalUrls ?? true,
    payloadLifetimeMs: options.payloadLifetimeMs ?? SENDER_PAYLOAD_LIFETIME_MS,
    now,
    faults: [],
    requests: [],
    listEndpoints: () => [...endpoints.values()].map(endpointView),
    createEndpoint: (url) => sender.createEndpoint(url),
    setEnabled(id, enabled) {
      const e = endpoints.get(id)
      if (!e) return false
      e.failures = 0
      if (!enabled) disable(e)
      else if (!e.enabled) {
        e.enabled = true
        for (const d of deliveries.values()) if (d.endpointId === id && d.state === 'pending' && d.timer === undefined) schedule(d, 0)
      }
      return true
    },
    deliveries: (id) => (endpoints.has(id) ? sender.deliveries(id) : undefined),
    retry(endpointId, deliveryId) {
      const d = deliveries.get(deliveryId)
      if (!d || d.endpointId !== endpointId) return 'not_found'
      if (now() - d.createdAtMs > state.payloadLifetimeMs) return 'delivery_expired'
      requeue(d, 0)
      return 'ok'
    },
  }

  const sender: FaithfulSender = {
    fetch: (request) => handleApiRequest(state, request),
    createEndpoint(url, options) {
      const id = crypto.randomUUID()
      const secret = options?.secret ?? randomSecret()
      endpoints.set(id, { id, url, secret, enabled: true, failures: 0, created_at: new Date(now()).toISOString() })
      return { id, secret }
    },
    emit(input = {}) {
      const event: WebhookEvent = input.event ?? {
        id: crypto.randomUUID(),
        type: input.type ?? 'email.queued',
        created_at: new Date(now()).toISOString(),
        data: input.data ?? { id: crypto.randomUUID() },
      }
      const body = JSON.stringify(event)
      const created: SenderDelivery[] = []
      for (const e of endpoints.values()) {
        if (!e.enabled) continue
        const d: Delivery = {
          id: crypto.randomUUID(),
          endpointId: e.id,
          event,
          body,
          createdAtMs: now(),
          state: 'pending',
          attempts: 0,
          roundAttempts: 0,
          lastStatus: null,
          nextAttemptAtMs: null,
          timer: undefined,
        }
        deliveries.set(d.id, d)
        requeue(d, Math.floor(random() * (options.reorderWindowMs ?? 0)))
        created.push(view(d))
      }
      return { event, deliveries: created }
    },
    endpoint: (id) => {
      const e = endpoints.get(id)
      return e ? endpointView(e) : undefined
    },
    deliveries: (endpointId) =>
      [...deliveries.values()]
        .filter((d) => d.endpointId === endpointId)
        .reverse()
        .map(view),
    attempts,
    apiRequests: state.requests,
    injectApiFaults: (...faults) => void state.faults.push(...faults),
    idle(timeoutMs = 10_000) {
      if (!busy()) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`[@email-webhooks/core/testing] the sender was still delivering after ${timeoutMs} ms.`)),
          timeoutMs,
        )
        idleWaiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    },
    close() {
      closed = true
      for (const d of deliveries.values()) {
        clearTimeout(d.timer)
        d.timer = undefined
      }
      for (const c of inFlight) c.abort()
      checkIdle()
    },
  }
  return sender
}
