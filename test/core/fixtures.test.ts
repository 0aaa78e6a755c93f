/**
 * The testing kit and the JSON fixtures shipped for other languages: no drift between the
 * committed file and the kit, signatures reproduced by an independent signer (openssl), every
 * delivery answered as expected, and the signed-delivery helper and test clock usable as is.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  EMAIL_EVENT_TYPES,
  parseEnvelope,
  type VerifiedWebhook,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
} from '@email-webhooks/core'
import {
  createEvent,
  createFixtureDeliveries,
  createSignedDelivery,
  createTestClock,
  eventFixtures,
  FIXTURE_TIMESTAMP,
  type FixtureDelivery,
  TEST_SECRET,
  UNKNOWN_EVENT_TYPE,
  unknownEventFixture,
} from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'

interface FixturesDocument {
  description: string
  secret: string
  now: number
  signedContent: string
  deliveries: FixtureDelivery[]
}

const here = dirname(fileURLToPath(import.meta.url))
const CORE_DIR = resolve(here, '../../packages/core')
const FIXTURES_PATH = createRequire(import.meta.url).resolve('@email-webhooks/core/fixtures/deliveries.json')
const fixtures = JSON.parse(readFileSync(FIXTURES_PATH, 'utf8')) as FixturesDocument

/** HMAC-SHA256 by openssl, an implementation that shares no code with the library. */
function opensslHmac(secret: string, content: string): string {
  const out = execFileSync('openssl', ['dgst', '-sha256', '-hmac', secret], { input: Buffer.from(content, 'utf8'), encoding: 'utf8' })
  const match = /([0-9a-f]{64})\s*$/.exec(out)
  if (!match) throw new Error(`unexpected openssl output: ${out}`)
  return match[1]!
}

/**
 * What a receiver answers, computed from the library's verifier and envelope parser: a signed body
 * that is not an envelope is acknowledged (200) with code invalid_envelope, as the receiver does.
 */
async function answer(delivery: { headers: Record<string, string>; body: string }, nowMs: number) {
  let verified: VerifiedWebhook
  try {
    verified = await verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: fixtures.secret, now: () => nowMs })
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    return { status: error.status, code: error.code }
  }
  try {
    return { status: 200, type: parseEnvelope(delivery.body, verified.id).type }
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    expect([error.code, error.status]).toEqual(['invalid_envelope', 400])
    return { status: 200, code: error.code }
  }
}

describe('fixtures/deliveries.json', () => {
  it('is exported by the package as @email-webhooks/core/fixtures/deliveries.json and lies in packages/core/fixtures', () => {
    expect(FIXTURES_PATH).toBe(resolve(CORE_DIR, 'fixtures/deliveries.json'))
    const manifest = JSON.parse(readFileSync(resolve(CORE_DIR, 'package.json'), 'utf8')) as { files: string[] }
    expect(manifest.files).toContain('fixtures')
  })

  it('states the secret, the time and the signed content', () => {
    expect(fixtures.secret).toBe(TEST_SECRET)
    expect(fixtures.now).toBe(FIXTURE_TIMESTAMP)
    expect(fixtures.signedContent).toBe("webhook-id + '.' + webhook-timestamp + '.' + body")
    expect(fixtures.description).toMatch(/HMAC-SHA256/)
  })

  it('equals what createFixtureDeliveries() produces now (no drift)', async () => {
    expect(fixtures.deliveries).toEqual(await createFixtureDeliveries())
    expect(fixtures.deliveries).toEqual(await createFixtureDeliveries({ secret: fixtures.secret, now: fixtures.now }))
  })

  it('is byte for byte what scripts/write-fixtures.mjs writes (its --check mode passes)', () => {
    const out = execFileSync(process.execPath, ['scripts/write-fixtures.mjs', '--check'], { cwd: CORE_DIR, encoding: 'utf8' })
    expect(out).toMatch(/up to date/)
  })

  it('has unique delivery names and covers every email type, the unknown type and each refusal code', () => {
    const names = fixtures.deliveries.map((d) => d.name)
    expect(new Set(names).size).toBe(names.length)
    const accepted = fixtures.deliveries.filter((d) => d.expected.status === 200 && d.expected.type).map((d) => d.expected.type)
    expect(new Set(accepted)).toEqual(new Set([...EMAIL_EVENT_TYPES, UNKNOWN_EVENT_TYPE]))
    const codes = new Set(fixtures.deliveries.map((d) => d.expected.code).filter(Boolean))
    expect(codes).toEqual(
      new Set([
        'signature_mismatch',
        'timestamp_too_old',
        'timestamp_too_new',
        'missing_header',
        'malformed_id',
        'malformed_timestamp',
        'malformed_signature',
        'invalid_envelope',
      ]),
    )
  })

  const authentic = fixtures.deliveries.filter((d) => d.expected.status !== 401 || d.expected.code?.startsWith('timestamp_'))
  for (const delivery of authentic) {
    it(`${delivery.name}: openssl reproduces its signature over id.timestamp.body`, () => {
      const { headers, body } = delivery
      const content = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`
      expect(opensslHmac(fixtures.secret, content)).toBe(headers['webhook-signature']!.toLowerCase())
    })
  }

  for (const name of ['tampered_body', 'wrong_secret']) {
    it(`${name}: openssl does not reproduce its signature`, () => {
      const { headers, body } = fixtures.deliveries.find((d) => d.name === name)!
      const content = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`
      expect(opensslHmac(fixtures.secret, content)).not.toBe(headers['webhook-signature'])
    })
  }

  for (const delivery of fixtures.deliveries) {
    const { status, code, type } = delivery.expected
    it(`${delivery.name}: answers ${code ? `${status} ${code}` : `${status} (${type})`} at the fixture time`, async () => {
      expect(await answer(delivery, fixtures.now * 1000)).toEqual(delivery.expected)
    })
  }

  it('answers timestamp_too_old to every valid delivery 10 minutes after the fixture time', async () => {
    const valid = fixtures.deliveries.filter((d) => d.name.startsWith('valid_'))
    for (const delivery of valid) {
      expect(await answer(delivery, (fixtures.now + 600) * 1000)).toEqual({ status: 401, code: 'timestamp_too_old' })
    }
  })
})

describe('eventFixtures and unknownEventFixture', () => {
  it('holds one envelope for each of the 11 email types, with distinct event and email ids', () => {
    expect(Object.keys(eventFixtures)).toEqual([...EMAIL_EVENT_TYPES])
    for (const type of EMAIL_EVENT_TYPES) {
      const event = eventFixtures[type]
      expect(event.type).toBe(type)
      expect(event.data.id).toMatch(/^[0-9a-f-]{36}$/)
      expect(parseEnvelope(JSON.stringify(event), event.id)).toEqual(event)
    }
    const ids = EMAIL_EVENT_TYPES.flatMap((type) => [eventFixtures[type].id, eventFixtures[type].data.id])
    expect(new Set(ids).size).toBe(22)
  })

  it('holds an unknown-type envelope that parses and is not an email type', () => {
    expect(unknownEventFixture.type).toBe(UNKNOWN_EVENT_TYPE)
    expect(EMAIL_EVENT_TYPES as readonly string[]).not.toContain(UNKNOWN_EVENT_TYPE)
    expect(parseEnvelope(JSON.stringify(unknownEventFixture), unknownEventFixture.id)).toEqual(unknownEventFixture)
  })

  it('is frozen, so one test cannot change another test’s fixture', () => {
    expect(Object.isFrozen(eventFixtures)).toBe(true)
    expect(Object.isFrozen(eventFixtures['email.bounced'])).toBe(true)
    expect(Object.isFrozen(eventFixtures['email.bounced'].data)).toBe(true)
    expect(Object.isFrozen(unknownEventFixture)).toBe(true)
  })
})

describe('createSignedDelivery', () => {
  it('signs a fresh email.queued event by default, with the body being exactly JSON.stringify(event)', async () => {
    const delivery = await createSignedDelivery()
    expect(delivery.event.type).toBe('email.queued')
    expect(delivery.body).toBe(JSON.stringify(delivery.event))
    expect(delivery.headers['webhook-id']).toBe(delivery.event.id)
    expect(delivery.headers['content-type']).toBe('application/json')
  })

  it('produces headers that verify as a Fetch Headers, as a record and through a real Request body', async () => {
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const expected = { id: delivery.event.id, timestamp: expect.any(Number) }
    await expect(verifyWebhook({ headers: new Headers(delivery.headers), body: delivery.body, secret: TEST_SECRET })).resolves.toEqual(
      expected,
    )
    await expect(verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: TEST_SECRET })).resolves.toEqual(expected)
    const request = new Request('https://receiver.test/hooks', { method: 'POST', headers: delivery.headers, body: delivery.body })
    const body = await request.arrayBuffer()
    await expect(verifyWebhook({ headers: request.headers, body, secret: TEST_SECRET })).resolves.toEqual(expected)
    expect(parseEnvelope(body, delivery.event.id)).toEqual(delivery.event)
  })

  it('signs the given event, id, timestamp and secret', async () => {
    const event: WebhookEvent = createEvent('email.complained', { created_at: '2026-02-01T00:00:00.000Z' })
    const delivery = await createSignedDelivery({ event, id: 'evt_override', timestamp: FIXTURE_TIMESTAMP, secret: 'whsec_custom' })
    expect(delivery.event).toEqual({ ...event, id: 'evt_override' })
    expect(event.id).not.toBe('evt_override')
    expect(delivery.headers['webhook-id']).toBe('evt_override')
    expect(delivery.headers['webhook-timestamp']).toBe(String(FIXTURE_TIMESTAMP))
    const now = () => FIXTURE_TIMESTAMP * 1000
    await expect(verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: 'whsec_custom', now })).resolves.toEqual({
      id: 'evt_override',
      timestamp: FIXTURE_TIMESTAMP,
    })
    await expect(verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: TEST_SECRET, now })).rejects.toMatchObject({
      code: 'signature_mismatch',
    })
  })

  it('takes its default timestamp from the now option', async () => {
    const delivery = await createSignedDelivery({ now: () => 1_000_999 })
    expect(delivery.headers['webhook-timestamp']).toBe('1000')
  })
})

describe('createEvent', () => {
  it('builds an envelope with fresh ids that parses, and applies overrides', () => {
    const a = createEvent('email.deferred')
    const b = createEvent('email.deferred')
    expect(a.id).not.toBe(b.id)
    expect(a.data.id).not.toBe(b.data.id)
    expect(parseEnvelope(JSON.stringify(a), a.id)).toEqual(a)
    expect(createEvent('email.deferred', { data: { id: 'email_1' } }).data).toEqual({ id: 'email_1' })
  })
})

describe('createTestClock', () => {
  it('starts where told, advances forward and back, and can be set', () => {
    const clock = createTestClock(1_500)
    expect([clock.now(), clock.nowSeconds()]).toEqual([1_500, 1])
    clock.advance(2_000)
    expect([clock.now(), clock.nowSeconds()]).toEqual([3_500, 3])
    clock.advance(-3_000)
    expect(clock.now()).toBe(500)
    clock.set(FIXTURE_TIMESTAMP * 1000)
    expect(clock.nowSeconds()).toBe(FIXTURE_TIMESTAMP)
  })

  it('starts at the real time by default', () => {
    const before = Date.now()
    const clock = createTestClock()
    expect(clock.now()).toBeGreaterThanOrEqual(before)
    expect(clock.now()).toBeLessThanOrEqual(Date.now())
  })

  it('drives the timestamp window through the now option: fresh, 300 s later still fine, 301 s later too old, set back too new', async () => {
    const clock = createTestClock(FIXTURE_TIMESTAMP * 1000)
    const delivery = await createSignedDelivery({ type: 'email.bounced', now: clock.now })
    const { now } = clock // passed detached, as an option would be
    const verify = () => verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: TEST_SECRET, now })
    await expect(verify()).resolves.toEqual({ id: delivery.event.id, timestamp: FIXTURE_TIMESTAMP })
    clock.advance(300_000)
    await expect(verify()).resolves.toMatchObject({ id: delivery.event.id })
    clock.advance(1_000)
    await expect(verify()).rejects.toMatchObject({ code: 'timestamp_too_old' })
    clock.set((FIXTURE_TIMESTAMP - 301) * 1000)
    await expect(verify()).rejects.toMatchObject({ code: 'timestamp_too_new' })
  })
})
