/**
 * Signed fixtures: a ready envelope for each email event type and one unknown type, and signed
 * deliveries for tests (`createSignedDelivery`). The whole set of fixture deliveries, with the
 * rejection cases, is in fixture-deliveries.ts; with the published test secret and fixed
 * timestamps it ships as `fixtures/deliveries.json`.
 */
import { EMAIL_EVENT_TYPES, type EmailEventOf, type EmailEventType, signWebhook, type WebhookEvent } from '@email-webhooks/core'

/** The published test secret. Never use it for a real endpoint. */
export const TEST_SECRET = 'whsec_email_webhooks_test_secret_do_not_use_in_production'
/** The fixed time of the JSON fixtures: 2026-01-01T00:00:00Z, in seconds. */
export const FIXTURE_TIMESTAMP = 1_767_225_600
/** The type used for the unknown-event fixture: a kind this version does not know. */
export const UNKNOWN_EVENT_TYPE = 'organization.updated'

/** The `created_at` of every fixture envelope. */
export const FIXTURE_CREATED_AT = '2026-01-01T00:00:00.000Z'

/** A fixed UUID (v7-shaped) for fixture `index` of `group`. */
export function fixtureUuid(group: number, index: number): string {
  return `019b7a00-0000-7000-${String(8000 + group)}-${String(index).padStart(12, '0')}`
}

/**
 * Builds an envelope of the given type with fresh ids (or the ones given).
 * @example
 * const event = createEvent('email.bounced', { data: { id: emailId } })
 */
export function createEvent<T extends EmailEventType>(type: T, overrides?: Partial<EmailEventOf<T>>): EmailEventOf<T>
export function createEvent(type: string, overrides?: Partial<WebhookEvent>): WebhookEvent
export function createEvent(type: string, overrides: Partial<WebhookEvent> = {}): WebhookEvent {
  return {
    id: crypto.randomUUID(),
    type,
    created_at: new Date().toISOString(),
    data: { id: crypto.randomUUID() },
    ...overrides,
  }
}

/** Fixed envelopes: one per email event type, with stable ids. */
export const eventFixtures: { readonly [T in EmailEventType]: EmailEventOf<T> } = Object.freeze(
  Object.fromEntries(
    EMAIL_EVENT_TYPES.map((type, index) => [
      type,
      Object.freeze({
        id: fixtureUuid(0, index + 1),
        type,
        created_at: FIXTURE_CREATED_AT,
        data: Object.freeze({ id: fixtureUuid(1, index + 1) }),
      }),
    ]),
  ),
) as unknown as { readonly [T in EmailEventType]: EmailEventOf<T> }

/** A fixed envelope of a type this version does not know (it must still be acknowledged). */
export const unknownEventFixture: WebhookEvent = Object.freeze({
  id: fixtureUuid(0, 99),
  type: UNKNOWN_EVENT_TYPE,
  created_at: FIXTURE_CREATED_AT,
  data: Object.freeze({ organization_id: fixtureUuid(2, 1) }),
})

/** Input of {@link createSignedDelivery}. */
export interface CreateSignedDeliveryInput {
  /** Secret to sign with; default {@link TEST_SECRET}. */
  secret?: string
  /** Type of a fresh event when `event` is not given; default `'email.queued'`. */
  type?: string
  /** The envelope to send; default a fresh one of `type`. */
  event?: WebhookEvent
  /** Overrides the event id (and the webhook-id header). */
  id?: string
  /** Signing time in seconds; default now (or `now()` when given). */
  timestamp?: number
  /** Clock in milliseconds for the default timestamp. */
  now?: () => number
}

/** A signed delivery: headers and body ready for supertest, `app.request()` or `fetch`; `event` is typed by its type. */
export interface SignedDelivery<E extends WebhookEvent = WebhookEvent> {
  headers: Record<string, string>
  body: string
  event: E
}

/**
 * Signs an event the way the email service does. With an email `type` (or none: `email.queued`),
 * `event` is that type's envelope, so `event.data.id` is a string.
 * @example
 * const { headers, body, event } = await createSignedDelivery({ type: 'email.bounced' })
 * const res = await app.request('/hooks', { method: 'POST', headers, body })
 */
export async function createSignedDelivery<E extends WebhookEvent>(
  input: CreateSignedDeliveryInput & { event: E },
): Promise<SignedDelivery<E>>
export async function createSignedDelivery<T extends EmailEventType = 'email.queued'>(
  input?: CreateSignedDeliveryInput & { type?: T; event?: undefined },
): Promise<SignedDelivery<EmailEventOf<T>>>
export async function createSignedDelivery(input?: CreateSignedDeliveryInput): Promise<SignedDelivery>
export async function createSignedDelivery(input: CreateSignedDeliveryInput = {}): Promise<SignedDelivery> {
  const base = input.event ?? createEvent(input.type ?? 'email.queued')
  const event = input.id === undefined ? base : { ...base, id: input.id }
  const timestamp = input.timestamp ?? Math.floor((input.now ?? Date.now)() / 1000)
  const signed = await signWebhook({ secret: input.secret ?? TEST_SECRET, body: JSON.stringify(event), id: event.id, timestamp })
  return { headers: signed.headers, body: signed.body, event }
}
