/**
 * Every fixture delivery with the answer a correct receiver gives it: the valid ones (each email
 * type, an unknown type, the edges of the window, upper-case hex), the refused ones (tampered,
 * wrong secret, out of the window, each header missing or malformed) and the signed bodies that
 * are not an envelope (acknowledged, not handled). `fixtures/deliveries.json` is this set.
 */
import { EMAIL_EVENT_TYPES, signWebhook, type WebhookEvent, type WebhookVerificationErrorCode } from '@email-webhooks/core'
import {
  eventFixtures,
  FIXTURE_CREATED_AT,
  FIXTURE_TIMESTAMP,
  fixtureUuid,
  TEST_SECRET,
  UNKNOWN_EVENT_TYPE,
  unknownEventFixture,
} from './fixtures.js'

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

type Sign = (event: WebhookEvent, timestamp?: number, key?: string) => Promise<{ headers: Record<string, string>; body: string }>

function without(headers: Record<string, string>, name: string): Record<string, string> {
  const copy = { ...headers }
  delete copy[name]
  return copy
}

/** The deliveries a receiver accepts: one per email type, an unknown type, the window's edges, upper-case hex. */
async function accepted(sign: Sign, now: number): Promise<FixtureDelivery[]> {
  const out: FixtureDelivery[] = []
  const accept = (name: string, description: string, signed: { headers: Record<string, string>; body: string }, type: string) =>
    out.push({ name, description, ...signed, expected: { status: 200, type } })
  for (const type of EMAIL_EVENT_TYPES) accept(`valid_${type}`, `A valid ${type} delivery.`, await sign(eventFixtures[type]), type)
  accept(
    'valid_unknown_type',
    `A valid delivery of a type this version does not know (${UNKNOWN_EVENT_TYPE}); it must be acknowledged.`,
    await sign(unknownEventFixture),
    UNKNOWN_EVENT_TYPE,
  )
  const base = eventFixtures['email.bounced']
  const old = { ...base, id: fixtureUuid(0, 101) }
  accept('boundary_300s_old', 'Signed exactly 300 s before now: still inside the window.', await sign(old, now - 300), old.type)
  const future = { ...base, id: fixtureUuid(0, 102) }
  accept('boundary_300s_future', 'Signed exactly 300 s after now: still inside the window.', await sign(future, now + 300), future.type)
  const upper = { ...base, id: fixtureUuid(0, 103) }
  const signed = await sign(upper)
  const headers = { ...signed.headers, 'webhook-signature': (signed.headers['webhook-signature'] as string).toUpperCase() }
  accept(
    'valid_uppercase_signature',
    'The signature in upper-case hex decodes to the same MAC.',
    { headers, body: signed.body },
    upper.type,
  )
  return out
}

/** The deliveries a receiver refuses with 401, each with its code. */
async function refused(sign: Sign, now: number, secret: string): Promise<FixtureDelivery[]> {
  const base = eventFixtures['email.bounced']
  const good = await sign(base)
  const signature = good.headers['webhook-signature'] as string
  const rows: [string, string, Record<string, string>, string, WebhookVerificationErrorCode][] = [
    [
      'tampered_body',
      'The body was changed after signing.',
      good.headers,
      good.body.replace('"email.bounced"', '"email.complained"'),
      'signature_mismatch',
    ],
    ['wrong_secret', 'Signed with another secret.', (await sign(base, now, `${secret}-other`)).headers, good.body, 'signature_mismatch'],
    ['stale_timestamp', 'Signed 301 s before now.', (await sign(base, now - 301)).headers, good.body, 'timestamp_too_old'],
    ['future_timestamp', 'Signed 301 s after now.', (await sign(base, now + 301)).headers, good.body, 'timestamp_too_new'],
    ...['webhook-id', 'webhook-timestamp', 'webhook-signature'].map(
      (header): [string, string, Record<string, string>, string, WebhookVerificationErrorCode] => [
        `missing_${header.replace('-', '_')}`,
        `The ${header} header is missing.`,
        without(good.headers, header),
        good.body,
        'missing_header',
      ],
    ),
    ['malformed_id', 'The webhook-id contains a dot.', { ...good.headers, 'webhook-id': `${base.id}.x` }, good.body, 'malformed_id'],
    [
      'malformed_timestamp',
      'The webhook-timestamp is not digits only.',
      { ...good.headers, 'webhook-timestamp': `${now}abc` },
      good.body,
      'malformed_timestamp',
    ],
    [
      'malformed_signature_short',
      'The signature has 63 hex characters.',
      { ...good.headers, 'webhook-signature': signature.slice(1) },
      good.body,
      'malformed_signature',
    ],
    [
      'malformed_signature_long',
      'The signature has 65 hex characters.',
      { ...good.headers, 'webhook-signature': `${signature}0` },
      good.body,
      'malformed_signature',
    ],
    [
      'malformed_signature_non_hex',
      'The signature has 64 characters, one of them not hexadecimal.',
      { ...good.headers, 'webhook-signature': `g${signature.slice(1)}` },
      good.body,
      'malformed_signature',
    ],
    [
      'malformed_signature_prefixed',
      'The signature carries a "v1," prefix.',
      { ...good.headers, 'webhook-signature': `v1,${signature}` },
      good.body,
      'malformed_signature',
    ],
  ]
  return rows.map(([name, description, headers, body, code]) => ({ name, description, headers, body, expected: { status: 401, code } }))
}

/**
 * Signed and in the window, but not an envelope: acknowledged (200) and recorded, so the sender
 * does not resend the same bytes until it disables the endpoint; the receiver reports it.
 */
async function ignored(secret: string, now: number): Promise<FixtureDelivery[]> {
  const base = eventFixtures['email.bounced']
  const dataless = fixtureUuid(0, 202)
  const cases: [string, string, string, string][] = [
    ['signed_not_json', 'Correctly signed, but the body is not JSON.', fixtureUuid(0, 200), 'not json'],
    ['id_mismatch', 'Correctly signed, but the envelope id differs from webhook-id.', fixtureUuid(0, 201), JSON.stringify(base)],
    [
      'known_type_without_data_id',
      'Correctly signed, but an email event whose data has no string id.',
      dataless,
      JSON.stringify({ id: dataless, type: 'email.bounced', created_at: FIXTURE_CREATED_AT, data: {} }),
    ],
  ]
  const out: FixtureDelivery[] = []
  for (const [name, description, id, body] of cases) {
    const signed = await signWebhook({ secret, body, id, timestamp: now })
    out.push({ name, description, headers: signed.headers, body: signed.body, expected: { status: 200, code: 'invalid_envelope' } })
  }
  return out
}

/**
 * Every fixture delivery: one valid delivery per email type and for an unknown type, the
 * accepted edge cases (exactly ±300 s, upper-case hex), then each rejection case (tampered
 * body, wrong secret, stale, future, each header missing or malformed), and the signed bodies that
 * are not an envelope (acknowledged with 200, code `invalid_envelope`, no handler run). Verify
 * them with the same `secret` and `now`.
 * @example
 * for (const fixture of await createFixtureDeliveries()) expect((await send(fixture)).status).toBe(fixture.expected.status)
 */
export async function createFixtureDeliveries(options: FixtureDeliveriesOptions = {}): Promise<FixtureDelivery[]> {
  const secret = options.secret ?? TEST_SECRET
  const now = options.now ?? FIXTURE_TIMESTAMP
  const sign: Sign = (event, timestamp = now, key = secret) =>
    signWebhook({ secret: key, body: JSON.stringify(event), id: event.id, timestamp })
  return [...(await accepted(sign, now)), ...(await refused(sign, now, secret)), ...(await ignored(secret, now))]
}
