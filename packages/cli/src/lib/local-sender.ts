/**
 * The local sender of `email-webhooks sender`: the testing kit's faithful sender (it delivers as
 * the contract says: 10 s timeout, backoff over 10 attempts, the endpoint disabled after 10
 * failures in a row) with one endpoint at the user's receiver, and its management API and email
 * reads on 127.0.0.1 under a throwaway key. In fail mode, attempts fail before they reach the
 * receiver, as if it were down. What happens is told to an observer; nothing here prints.
 */
import {
  createFaithfulSender,
  type FaithfulSender,
  listenSender,
  type SenderAttempt,
  type SenderListener,
} from '@email-webhooks/core/testing'

/** The scopes of the throwaway key: the webhook operations (recover) and the email reads (reconcile). */
export const LOCAL_KEY_SCOPES: readonly string[] = ['webhooks:manage', 'emails:read']

/** An emitted event, and the email it belongs to. */
export interface EmittedEvent {
  eventId: string
  type: string
  emailId: string
  /** 1-based number of its email in this run. */
  emailNumber: number
}

/** What the local sender tells as it goes. */
export interface LocalSenderObserver {
  /** An attempt ended; `failures` is the endpoint's count of failures in a row after it, `onPurpose` when fail mode made it fail. */
  attempt(attempt: SenderAttempt, event: EmittedEvent | undefined, state: { failures: number; onPurpose: boolean }): void
  /** An event was emitted; `recorded` is false when the endpoint was disabled (no delivery record). */
  emitted(event: EmittedEvent, recorded: boolean): void
  /** The endpoint was enabled or disabled (by its failures, by a control, or by a PATCH through the API). */
  endpoint(state: { enabled: boolean; failures: number }): void
  /** A management API request was answered. */
  api(request: { method: string; path: string; status: number }): void
}

/** What the local sender is made with. */
export interface LocalSenderSettings {
  /** The receiver's URL. */
  to: string
  /** Port on 127.0.0.1 for the API; 0 for any free one. */
  port: number
  /** The endpoint's secret; undefined makes a throwaway one. */
  secret: string | undefined
  /** Multiplies the backoff waits (1: the contract's 5 s doubling). */
  timeScale: number
}

/** Deliveries by what their documented fields say (`last_status`, `next_attempt_at`), never by `state`. */
export interface DeliveryCounts {
  /** The last attempt got a 2xx. */
  delivered: number
  /** Not delivered, an attempt scheduled. */
  scheduled: number
  /** Not delivered, no attempt scheduled: paused by a disabled endpoint, or its 10 attempts spent. */
  stopped: number
}

/** The endpoint and what was emitted, now. */
export interface LocalSenderStatus {
  enabled: boolean
  failures: number
  failMode: boolean
  emails: number
  events: number
  /** Events emitted while the endpoint was disabled: no delivery record (only the email's event list has them). */
  withoutRecord: number
  deliveries: DeliveryCounts
}

const hex = (bytes: number): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('')

/** A throwaway API key for this process only. */
export const newLocalKey = (): string => `ek_local_${hex(16)}`
/** A throwaway endpoint secret for this process only. */
export const newLocalSecret = (): string => `whsec_local_${hex(24)}`

/** The faithful sender with one endpoint, served on 127.0.0.1. */
export class LocalSender {
  readonly apiKey: string = newLocalKey()
  readonly secret: string
  readonly endpointId: string
  readonly #sender: FaithfulSender
  readonly #observer: LocalSenderObserver
  readonly #events = new Map<string, EmittedEvent>()
  /** Signatures of attempts fail mode stopped (an attempt's signature is unique). */
  readonly #onPurpose = new Set<string>()
  #api: SenderListener | undefined
  #failing = false
  readonly #emails = new Set<string>()
  #withoutRecord = 0
  #enabled = true
  /** Attempts not told yet: an endpoint change is told after the attempts that led to it. */
  #told = 0

  private constructor(settings: LocalSenderSettings, observer: LocalSenderObserver) {
    this.#observer = observer
    this.#sender = createFaithfulSender({
      apiKeys: { [this.apiKey]: LOCAL_KEY_SCOPES },
      timeScale: settings.timeScale,
      fetch: (input, init) => this.#send(input, init),
      // Read after the loop has counted the failure and maybe disabled the endpoint.
      onAttempt: (attempt) => {
        this.#told++
        setImmediate(() => this.#attempted(attempt))
      },
    })
    this.secret = settings.secret ?? newLocalSecret()
    this.endpointId = this.#sender.createEndpoint(settings.to, { secret: this.secret }).id
  }

  /**
   * Creates the sender and its endpoint, and serves the API on 127.0.0.1.
   * @throws {Error} when the port cannot be bound (its `code`, e.g. EADDRINUSE).
   */
  static async start(settings: LocalSenderSettings, observer: LocalSenderObserver): Promise<LocalSender> {
    const local = new LocalSender(settings, observer)
    try {
      local.#api = await listenSender({ fetch: (request) => local.#serve(request) }, { port: settings.port })
    } catch (error) {
      local.#sender.close()
      throw error
    }
    return local
  }

  /** The API's base URL, ending in `/v1`. */
  get apiUrl(): string {
    return this.#api?.baseUrl ?? ''
  }

  /** Emits one event of an email to the endpoint (none when it is disabled: the email's list still has it). */
  emit(type: string, emailId: string, emailNumber: number): void {
    const { event, deliveries } = this.#sender.emit({ type, data: { id: emailId } })
    const emitted: EmittedEvent = { eventId: event.id, type, emailId, emailNumber }
    this.#events.set(event.id, emitted)
    this.#emails.add(emailId)
    if (deliveries.length === 0) this.#withoutRecord++
    this.#observer.emitted(emitted, deliveries.length > 0)
  }

  /** Fail mode: attempts fail before they reach the receiver (as if it were down), and count as failures. */
  setFailing(failing: boolean): void {
    this.#failing = failing
  }

  get failing(): boolean {
    return this.#failing
  }

  /** Enables or disables the endpoint through the management API (a PATCH, as any client makes it); its status. */
  async setEnabled(enabled: boolean): Promise<number> {
    const response = await this.#serve(
      new Request(`${this.apiUrl}/webhooks/${this.endpointId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled }),
      }),
    )
    return response.status
  }

  status(): LocalSenderStatus {
    const endpoint = this.#sender.endpoint(this.endpointId)
    const deliveries: DeliveryCounts = { delivered: 0, scheduled: 0, stopped: 0 }
    for (const d of this.#sender.deliveries(this.endpointId)) {
      if (d.last_status !== null && d.last_status >= 200 && d.last_status < 300) deliveries.delivered++
      else if (d.next_attempt_at !== null) deliveries.scheduled++
      else deliveries.stopped++
    }
    return {
      enabled: endpoint?.enabled ?? false,
      failures: endpoint?.failures ?? 0,
      failMode: this.#failing,
      emails: this.#emails.size,
      events: this.#events.size,
      withoutRecord: this.#withoutRecord,
      deliveries,
    }
  }

  /** Stops delivering (attempts in flight are abandoned) and serving. */
  async close(): Promise<void> {
    this.#sender.close()
    await this.#api?.close()
  }

  #send(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): Promise<Response> {
    if (!this.#failing) return globalThis.fetch(input, init)
    const signature = (init?.headers as Record<string, string> | undefined)?.['webhook-signature']
    if (signature !== undefined) this.#onPurpose.add(signature)
    return Promise.reject(new TypeError('fail mode: this attempt was not sent'))
  }

  async #serve(request: Request): Promise<Response> {
    const { method } = request
    const path = new URL(request.url).pathname
    const response = await this.#sender.fetch(request)
    this.#observer.api({ method, path, status: response.status })
    this.#checkEndpoint()
    return response
  }

  #attempted(attempt: SenderAttempt): void {
    const onPurpose = this.#onPurpose.delete(attempt.signature)
    const failures = this.#sender.endpoint(this.endpointId)?.failures ?? 0
    this.#observer.attempt(attempt, this.#events.get(attempt.eventId), { failures, onPurpose })
    if (--this.#told === 0) this.#checkEndpoint()
  }

  /** Tells the observer when the endpoint's enabled flag changed since it last looked. */
  #checkEndpoint(): void {
    const endpoint = this.#sender.endpoint(this.endpointId)
    if (!endpoint || endpoint.enabled === this.#enabled) return
    this.#enabled = endpoint.enabled
    this.#observer.endpoint({ enabled: endpoint.enabled, failures: endpoint.failures })
  }
}
