/**
 * Signed fixtures: a ready envelope for each email event type and one unknown type, signed
 * deliveries for tests (`createSignedDelivery`), and the rejection cases. The same set, with
 * the published test secret and fixed timestamps, ships as `fixtures/deliveries.json`.
 */
import {
  EMAIL_EVENT_TYPES,
  type EmailEventOf,
  type EmailEventType,
  signWebhook,
  type WebhookEvent,
  type WebhookVerificationErrorCode,
} from '@email-webhooks/core'

/** The published test secret. Never use it for a real endpoint. */
export const TEST_SECRET = 'whsec_email_webhooks_test_secret_do_not_use_in_production'
/** The fixed time of the JSON fixtures: 2026-01-01T00:00:00Z, in seconds. */
export const FIXTURE_TIMESTAMP = 1_767_225_600
/** The type used for the unknown-event fixture: a kind this version does not know. */
export const UNKNOWN_EVENT_TYPE = 'organization.updated'

const FIXTURE_CREATED_AT = '2026-01-01T00:00:00.000Z'

function fixtureUuid(group: number, index: number): string {
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

/** What a correct receiver answers to a fixture delivery. */
export interface FixtureExpectation {
  status: 200 | 400 | 401
  /** Error code of a refused delivery; `invalid_envelope` with status 200 for a signed body that is acknowledged but not handled. */
  code?: WebhookVerificationErrorCode
  /** Event type of an accepted delivery. */
  type?: string
}

/** One signed fixture delivery with its expected answer. */
export interface FixtureDelivery {
  name: string
  description: string
  headers: Record<string, string>
  body: string
  expected: FixtureExpectation
}

/** Options of {@link createFixtureDeliveries}. */
export interface FixtureDeliveriesOptions {
  secret?: string
  /** The receiver's current time in seconds; valid deliveries are signed at it. Default {@link FIXTURE_TIMESTAMP}. */
  now?: number
}

function without(headers: Record<string, string>, name: string): Record<string, string> {
  const copy = { ...headers }
  delete copy[name]
  return copy
}

/**
 * Every fixture delivery: one valid delivery per email type and for an unknown type, the
 * accepted edge cases (exactly ±300 s, upper-case hex), then each rejection case (tampered
 * body, wrong secret, stale, future, each header missing or malformed), and the signed bodies that
 * are not an envelope (acknowledged with 200, code `invalid_envelope`, no handler run). Verify
 * them with the same `secret` and `now`.
 */
export async function createFixtureDeliveries(options: FixtureDeliveriesOptions = {}): Promise<FixtureDelivery[]> {
  const secret = options.secret ?? TEST_SECRET
  const now = options.now ?? FIXTURE_TIMESTAMP
  const sign = (event: WebhookEvent, timestamp = now, key = secret) =>
    signWebhook({ secret: key, body: JSON.stringify(event), id: event.id, timestamp })
  const out: FixtureDelivery[] = []

  for (const type of EMAIL_EVENT_TYPES) {
    const { headers, body } = await sign(eventFixtures[type])
    out.push({ name: `valid_${type}`, description: `A valid ${type} delivery.`, headers, body, expected: { status: 200, type } })
  }
  {
    const { headers, body } = await sign(unknownEventFixture)
    out.push({
      name: 'valid_unknown_type',
      description: `A valid delivery of a type this version does not know (${UNKNOWN_EVENT_TYPE}); it must be acknowledged.`,
      headers,
      body,
      expected: { status: 200, type: UNKNOWN_EVENT_TYPE },
    })
  }

  const base = eventFixtures['email.bounced']
  const good = await sign(base)
  const accept = (name: string, description: string, headers: Record<string, string>, body: string, type: string) =>
    out.push({ name, description, headers, body, expected: { status: 200, type } })
  {
    const event = { ...base, id: fixtureUuid(0, 101) }
    const { headers, body } = await sign(event, now - 300)
    accept('boundary_300s_old', 'Signed exactly 300 s before now: still inside the window.', headers, body, event.type)
  }
  {
    const event = { ...base, id: fixtureUuid(0, 102) }
    const { headers, body } = await sign(event, now + 300)
    accept('boundary_300s_future', 'Signed exactly 300 s after now: still inside the window.', headers, body, event.type)
  }
  {
    const event = { ...base, id: fixtureUuid(0, 103) }
    const { headers, body } = await sign(event)
    const upper = { ...headers, 'webhook-signature': (headers['webhook-signature'] as string).toUpperCase() }
    accept('valid_uppercase_signature', 'The signature in upper-case hex decodes to the same MAC.', upper, body, event.type)
  }
  const reject = (name: string, description: string, headers: Record<string, string>, body: string, code: WebhookVerificationErrorCode) =>
    out.push({ name, description, headers, body, expected: { status: 401, code } })

  reject(
    'tampered_body',
    'The body was changed after signing.',
    good.headers,
    good.body.replace('"email.bounced"', '"email.complained"'),
    'signature_mismatch',
  )
  reject('wrong_secret', 'Signed with another secret.', (await sign(base, now, `${secret}-other`)).headers, good.body, 'signature_mismatch')
  reject('stale_timestamp', 'Signed 301 s before now.', (await sign(base, now - 301)).headers, good.body, 'timestamp_too_old')
  reject('future_timestamp', 'Signed 301 s after now.', (await sign(base, now + 301)).headers, good.body, 'timestamp_too_new')
  for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    reject(
      `missing_${header.replace('-', '_')}`,
      `The ${header} header is missing.`,
      without(good.headers, header),
      good.body,
      'missing_header',
    )
  }
  reject('malformed_id', 'The webhook-id contains a dot.', { ...good.headers, 'webhook-id': `${base.id}.x` }, good.body, 'malformed_id')
  reject(
    'malformed_timestamp',
    'The webhook-timestamp is not digits only.',
    { ...good.headers, 'webhook-timestamp': `${now}abc` },
    good.body,
    'malformed_timestamp',
  )
  reject(
    'malformed_signature_short',
    'The signature has 63 hex characters.',
    { ...good.headers, 'webhook-signature': (good.headers['webhook-signature'] as string).slice(1) },
    good.body,
    'malformed_signature',
  )
  reject(
    'malformed_signature_long',
    'The signature has 65 hex characters.',
    { ...good.headers, 'webhook-signature': `${good.headers['webhook-signature']}0` },
    good.body,
    'malformed_signature',
  )
  reject(
    'malformed_signature_non_hex',
    'The signature has 64 characters, one of them not hexadecimal.',
    { ...good.headers, 'webhook-signature': `g${(good.headers['webhook-signature'] as string).slice(1)}` },
    good.body,
    'malformed_signature',
  )
  reject(
    'malformed_signature_prefixed',
    'The signature carries a "v1," prefix.',
    { ...good.headers, 'webhook-signature': `v1,${good.headers['webhook-signature']}` },
    good.body,
    'malformed_signature',
  )
  // Signed and in the window, but not an envelope: acknowledged (200) and recorded, so the sender
  // does not resend the same bytes until it disables the endpoint; the receiver reports it.
  const ignore = (name: string, description: string, headers: Record<string, string>, body: string) =>
    out.push({ name, description, headers, body, expected: { status: 200, code: 'invalid_envelope' } })
  {
    const id = fixtureUuid(0, 200)
    const signed = await signWebhook({ secret, body: 'not json', id, timestamp: now })
    ignore('signed_not_json', 'Correctly signed, but the body is not JSON.', signed.headers, signed.body)
  }
  {
    const signed = await signWebhook({ secret, body: JSON.stringify(base), id: fixtureUuid(0, 201), timestamp: now })
    ignore('id_mismatch', 'Correctly signed, but the envelope id differs from webhook-id.', signed.headers, signed.body)
  }
  {
    const id = fixtureUuid(0, 202)
    const body = JSON.stringify({ id, type: 'email.bounced', created_at: FIXTURE_CREATED_AT, data: {} })
    const signed = await signWebhook({ secret, body, id, timestamp: now })
    ignore('known_type_without_data_id', 'Correctly signed, but an email event whose data has no string id.', signed.headers, signed.body)
  }
  return out
}
