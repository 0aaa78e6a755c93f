/**
 * The faithful sender's delivery loop: a delivery record per event and enabled endpoint, each
 * attempt freshly signed and POSTed with the receiver timeout and no redirects, failures retried
 * on the clock's backoff within the attempt budget, the endpoint disabled after `disableAfter`
 * consecutive failures and its counter reset by a success. Disabling pauses an endpoint's waiting
 * deliveries (they stay `pending`, with no next attempt) and enabling it again resumes them.
 * Idleness is a count of timers and attempts running, so checking it costs the same however many
 * deliveries were made.
 */
import type { WebhookEvent } from '@email-webhooks/core'
import type { SenderClock } from './sender-clock.js'
import { postAttempt } from './sender-post.js'
import type { SenderAttempt, SenderDelivery, SenderDeliveryState, SenderEndpoint } from './sender-types.js'

/** What the loop needs from the sender's options (defaults resolved). */
export interface DeliverySettings {
  clock: SenderClock
  random: () => number
  send: typeof fetch
  receiverTimeoutMs: number
  maxAttempts: number
  disableAfter: number
  payloadLifetimeMs: number
  repeatProbability: number
  onAttempt: ((attempt: SenderAttempt) => void) | undefined
  /** Whether records show this sender's own states, or the documented `pending` only. */
  descriptiveStates: boolean
}

interface Endpoint extends SenderEndpoint {
  secret: string
  /** Its deliveries, oldest first. */
  deliveries: Delivery[]
}

interface Delivery {
  id: string
  endpoint: Endpoint
  event: WebhookEvent
  body: string
  createdAtMs: number
  state: SenderDeliveryState
  attempts: number
  /** Attempts since the delivery was (re)queued: the budget is per round. */
  roundAttempts: number
  lastStatus: number | null
  nextAttemptAtMs: number | null
  timer: ReturnType<typeof setTimeout> | undefined
}

const view = (d: Delivery, descriptive: boolean): SenderDelivery => ({
  id: d.id,
  event_id: d.event.id,
  state: descriptive ? d.state : 'pending',
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

/** The endpoints, their deliveries and the attempts made. */
export class DeliveryLoop {
  readonly attempts: SenderAttempt[] = []
  readonly #settings: DeliverySettings
  readonly #endpoints = new Map<string, Endpoint>()
  readonly #deliveries = new Map<string, Delivery>()
  readonly #inFlight = new Set<AbortController>()
  #closed = false
  #running = 0
  #timers = 0
  #idleWaiters: Array<() => void> = []

  constructor(settings: DeliverySettings) {
    this.#settings = settings
  }

  /** Creates an enabled endpoint. */
  addEndpoint(url: string, secret: string): { id: string; secret: string } {
    const id = crypto.randomUUID()
    const created_at = new Date(this.#settings.clock.now()).toISOString()
    this.#endpoints.set(id, { id, url, secret, enabled: true, failures: 0, created_at, deliveries: [] })
    return { id, secret }
  }

  endpoints(): SenderEndpoint[] {
    return [...this.#endpoints.values()].map(endpointView)
  }

  endpoint(id: string): SenderEndpoint | undefined {
    const e = this.#endpoints.get(id)
    return e ? endpointView(e) : undefined
  }

  /** An endpoint's delivery records, newest first; undefined for an unknown endpoint. */
  deliveries(endpointId: string): SenderDelivery[] | undefined {
    return this.#endpoints
      .get(endpointId)
      ?.deliveries.map((d) => view(d, this.#settings.descriptiveStates))
      .reverse()
  }

  /** Makes a delivery record of `event` for every enabled endpoint (none for a disabled one, as the contract says) and queues it. */
  deliver(event: WebhookEvent): SenderDelivery[] {
    const body = JSON.stringify(event)
    const created: SenderDelivery[] = []
    for (const endpoint of this.#endpoints.values()) {
      if (!endpoint.enabled) continue
      const d: Delivery = {
        id: crypto.randomUUID(),
        endpoint,
        event,
        body,
        createdAtMs: this.#settings.clock.now(),
        state: 'pending',
        attempts: 0,
        roundAttempts: 0,
        lastStatus: null,
        nextAttemptAtMs: null,
        timer: undefined,
      }
      this.#deliveries.set(d.id, d)
      endpoint.deliveries.push(d)
      this.#queue(d, this.#settings.clock.firstAttemptDelayMs())
      created.push(view(d, this.#settings.descriptiveStates))
    }
    return created
  }

  /** PATCH `{ enabled }`: resets the failure counter; disabling pauses waiting deliveries, enabling resumes them. False for an unknown endpoint. */
  setEnabled(id: string, enabled: boolean): boolean {
    const e = this.#endpoints.get(id)
    if (!e) return false
    e.failures = 0
    if (!enabled && e.enabled) this.#disable(e)
    if (enabled && !e.enabled) {
      e.enabled = true
      for (const d of e.deliveries) if (d.state === 'pending' && d.timer === undefined) this.#schedule(d, 0)
    }
    return true
  }

  /** POST retry: requeues a delivery with a fresh budget (paused until the endpoint is enabled). */
  retry(endpointId: string, deliveryId: string): 'ok' | 'not_found' | 'delivery_expired' {
    const d = this.#deliveries.get(deliveryId)
    if (!d || d.endpoint.id !== endpointId) return 'not_found'
    if (this.#settings.clock.now() - d.createdAtMs > this.#settings.payloadLifetimeMs) return 'delivery_expired'
    this.#queue(d, 0)
    return 'ok'
  }

  /** True while an attempt is scheduled or running. */
  busy(): boolean {
    return this.#running > 0 || this.#timers > 0
  }

  /** Resolves once not busy; rejects after `timeoutMs`. */
  idle(timeoutMs: number): Promise<void> {
    if (!this.busy()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`[@email-webhooks/core/testing] the sender was still delivering after ${timeoutMs} ms.`)),
        timeoutMs,
      )
      this.#idleWaiters.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  /** Cancels every scheduled attempt and aborts those running. */
  close(): void {
    this.#closed = true
    for (const d of this.#deliveries.values()) this.#unschedule(d)
    for (const c of this.#inFlight) c.abort()
    this.#checkIdle()
  }

  #checkIdle(): void {
    if (this.busy()) return
    const waiters = this.#idleWaiters
    this.#idleWaiters = []
    for (const w of waiters) w()
  }

  /** Starts a round: a fresh budget, the first attempt after `delayMs`, or paused while the endpoint is disabled. */
  #queue(d: Delivery, delayMs: number): void {
    d.roundAttempts = 0
    if (d.endpoint.enabled) this.#schedule(d, delayMs)
    else this.#pause(d)
  }

  #schedule(d: Delivery, delayMs: number): void {
    if (this.#closed) return
    this.#unschedule(d)
    d.state = 'pending'
    d.nextAttemptAtMs = this.#settings.clock.now() + delayMs
    this.#timers++
    d.timer = setTimeout(() => {
      d.timer = undefined
      this.#timers--
      void this.#attempt(d)
    }, delayMs)
  }

  #unschedule(d: Delivery): void {
    if (d.timer === undefined) return
    clearTimeout(d.timer)
    d.timer = undefined
    this.#timers--
  }

  /** Waiting for its endpoint to be enabled: `pending`, no next attempt. */
  #pause(d: Delivery): void {
    this.#unschedule(d)
    d.state = 'pending'
    d.nextAttemptAtMs = null
  }

  #disable(e: Endpoint): void {
    e.enabled = false
    for (const d of e.deliveries) if (d.timer !== undefined) this.#pause(d)
  }

  async #attempt(d: Delivery): Promise<void> {
    this.#running++
    try {
      await this.#attemptOnce(d)
    } finally {
      this.#running--
      this.#checkIdle()
    }
  }

  async #attemptOnce(d: Delivery): Promise<void> {
    const e = d.endpoint
    if (this.#closed) return
    if (!e.enabled) return this.#pause(d)
    d.state = 'delivering'
    d.nextAttemptAtMs = null
    d.attempts++
    d.roundAttempts++
    const record = await this.#post(d, d.attempts, false)
    d.lastStatus = record.status === 0 ? null : record.status
    if (record.ok) {
      d.state = 'succeeded'
      e.failures = 0
      const p = this.#settings.repeatProbability
      if (p > 0 && this.#settings.random() < p) await this.#post(d, d.attempts, true)
      return
    }
    e.failures++
    if (e.enabled && e.failures >= this.#settings.disableAfter) this.#disable(e)
    if (d.roundAttempts >= this.#settings.maxAttempts) d.state = 'failed'
    else if (!e.enabled) this.#pause(d)
    else this.#schedule(d, this.#settings.clock.backoffMs(d.roundAttempts))
  }

  /** One POST of `d`, freshly signed, recorded in `attempts`. */
  async #post(d: Delivery, attemptNo: number, repeat: boolean): Promise<SenderAttempt> {
    const { send, receiverTimeoutMs, clock, onAttempt } = this.#settings
    const e = d.endpoint
    const record = await postAttempt(
      { send, receiverTimeoutMs, inFlight: this.#inFlight },
      { url: e.url, secret: e.secret, endpointId: e.id, deliveryId: d.id, event: d.event, body: d.body },
      { attemptNo, repeat, timestamp: Math.floor(clock.now() / 1000) },
    )
    this.attempts.push(record)
    onAttempt?.(record)
    return record
  }
}
