/**
 * verifyWebhook: raw bytes in every shape, header sources, strict header syntax, the ±300 s
 * window, signature shape, rotation, secret validation, and errors that never leak secrets.
 */
import { createHmac } from 'node:crypto'
import { runInNewContext } from 'node:vm'
import {
  DEFAULT_TOLERANCE_SECONDS,
  signWebhook,
  type VerifyWebhookInput,
  verifyWebhook,
  type WebhookBody,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationErrorCode,
} from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

const NOW_S = 1_767_225_600
const NOW = (): number => NOW_S * 1000
const ID = '019b7a00-0000-7000-8000-000000000001'
const OTHER_SECRET = 'whsec_another_endpoint_secret_for_tests'
const encoder = new TextEncoder()

/** The spec's signature, computed without the library: HMAC-SHA256(secret, id.timestamp.body) in lowercase hex. */
function referenceSignature(secret: string, id: string, timestamp: string, body: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(body).digest('hex')
}

function headersFor(id: string, timestamp: string, signature: string): Record<string, string> {
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }
}

async function signed<B extends string | Uint8Array>(body: B, options: { id?: string; timestamp?: number; secret?: string } = {}) {
  return signWebhook({ secret: options.secret ?? TEST_SECRET, body, id: options.id ?? ID, timestamp: options.timestamp ?? NOW_S })
}

type VerifyCase = Omit<VerifyWebhookInput, 'secret'> & { secret?: VerifyWebhookInput['secret'] }

function verify(input: VerifyCase): ReturnType<typeof verifyWebhook> {
  return verifyWebhook({ secret: TEST_SECRET, now: NOW, ...input })
}

function signatureValues(headers: WebhookHeaders): string[] {
  if (typeof headers !== 'object' || headers === null) return []
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const value = (headers as { get(name: string): string | null }).get('webhook-signature')
    return value ? [value] : []
  }
  return Object.entries(headers as Record<string, unknown>)
    .filter(([key]) => key.toLowerCase() === 'webhook-signature')
    .flatMap(([, value]) => [value].flat())
    .filter((value): value is string => typeof value === 'string' && value.length > 0)
}

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body
  if (body instanceof Uint8Array || body instanceof ArrayBuffer) return new TextDecoder().decode(body)
  return ''
}

/**
 * Verifies and expects a rejection with `code`; checks the error's shape and that nothing
 * secret or attacker-supplied (secret, signature header, body) appears in what it exposes.
 */
async function expectRejected(input: VerifyCase, code: WebhookVerificationErrorCode): Promise<WebhookVerificationError> {
  const full: VerifyWebhookInput = { secret: TEST_SECRET, now: NOW, ...input }
  const outcome = await verifyWebhook(full).then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  )
  if (!('error' in outcome)) throw new Error(`expected a rejection with ${code}, but verification passed`)
  const error = outcome.error
  expect(error).toBeInstanceOf(WebhookVerificationError)
  const rejection = error as WebhookVerificationError
  expect({ name: rejection.name, code: rejection.code, status: rejection.status }).toEqual({
    name: 'WebhookVerificationError',
    code,
    status: 401,
  })
  const exposed = `${rejection.message}\n${rejection.stack ?? ''}\n${JSON.stringify(rejection)}\n${String(rejection.cause ?? '')}`
  for (const secret of [full.secret].flat()) expect(exposed).not.toContain(secret)
  for (const signature of signatureValues(full.headers)) expect(exposed).not.toContain(signature)
  expect(rejection.message).not.toMatch(/[0-9a-f]{16,}/i)
  const text = bodyText(full.body)
  if (text.length >= 6) expect(exposed).not.toContain(text)
  return rejection
}

const BODIES: { name: string; bytes: Uint8Array }[] = [
  { name: 'invalid UTF-8 bytes', bytes: new Uint8Array([0x7b, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x7d]) },
  { name: 'emoji', bytes: encoder.encode('{"subject":"📬 Delivered ✉️ 👍🏽 — déjà vu"}') },
  { name: 'CRLF line endings', bytes: encoder.encode('{\r\n  "id": "x",\r\n  "type": "email.queued"\r\n}\r\n') },
  { name: 'a UTF-8 BOM', bytes: new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"id":"x"}')]) },
  { name: 'an empty body', bytes: new Uint8Array(0) },
]

describe('verifyWebhook: the raw body', () => {
  for (const { name, bytes } of BODIES) {
    it(`verifies ${name} given as a Uint8Array and as an ArrayBuffer, over exactly those bytes`, async () => {
      const { headers } = await signed(bytes)
      expect(headers['webhook-signature']).toBe(referenceSignature(TEST_SECRET, ID, String(NOW_S), bytes))
      await expect(verify({ headers, body: bytes })).resolves.toEqual({ id: ID, timestamp: NOW_S })
      const buffer = bytes.slice().buffer
      await expect(verify({ headers, body: buffer })).resolves.toEqual({ id: ID, timestamp: NOW_S })
    })
  }

  it('verifies a string body as its UTF-8 bytes (emoji, CRLF, BOM and empty alike)', async () => {
    for (const text of ['{"subject":"📬 ✉️ 👍🏽"}', '{\r\n"a": 1\r\n}\r\n', '\uFEFF{"a":1}', '']) {
      const { headers } = await signed(encoder.encode(text))
      await expect(verify({ headers, body: text })).resolves.toEqual({ id: ID, timestamp: NOW_S })
    }
  })

  it('answers signature_mismatch when invalid UTF-8 bytes are decoded to a string before verifying', async () => {
    const bytes = BODIES[0]!.bytes
    const { headers } = await signed(bytes)
    await expectRejected({ headers, body: new TextDecoder().decode(bytes) }, 'signature_mismatch')
  })

  it('answers signature_mismatch when the BOM is stripped from a body signed with it', async () => {
    const { headers } = await signed('\uFEFF{"a":1}')
    await expectRejected({ headers, body: '{"a":1}' }, 'signature_mismatch')
  })

  it('verifies a Uint8Array view with a non-zero byteOffset over exactly the view, whatever surrounds it', async () => {
    const body = encoder.encode('{"id":"view","note":"only these bytes are signed"}')
    const backing = new Uint8Array(body.byteLength + 13).fill(0x41)
    backing.set(body, 7)
    const view = backing.subarray(7, 7 + body.byteLength)
    expect(view.byteOffset).toBe(7)
    const { headers } = await signed(body)
    await expect(verify({ headers, body: view })).resolves.toEqual({ id: ID, timestamp: NOW_S })
    backing.fill(0x00, 0, 7)
    backing.fill(0xff, 7 + body.byteLength)
    await expect(verify({ headers, body: view })).resolves.toEqual({ id: ID, timestamp: NOW_S })
  })

  it('answers signature_mismatch when the signature covers the whole backing buffer, not just the view', async () => {
    const backing = encoder.encode('xx{"a":1}yy')
    const view = backing.subarray(2, backing.byteLength - 2)
    const { headers } = await signed(backing)
    await expectRejected({ headers, body: view }, 'signature_mismatch')
  })

  it('verifies a pooled Node Buffer (a view into a shared slab)', async () => {
    const text = '{"id":"pooled"}'
    const { headers } = await signed(text)
    const pooled = Buffer.from(text)
    await expect(verify({ headers, body: pooled })).resolves.toEqual({ id: ID, timestamp: NOW_S })
  })

  it('verifies a Uint8Array and an ArrayBuffer made in another realm (vm, as in jsdom tests), view offsets included', async () => {
    const text = '{"id":"other-realm"}'
    const { headers } = await signed(text)
    const realm = runInNewContext('({ Uint8Array, ArrayBuffer })') as {
      Uint8Array: Uint8ArrayConstructor
      ArrayBuffer: ArrayBufferConstructor
    }
    const padded = new realm.Uint8Array(text.length + 4)
    padded.set(encoder.encode(text), 2)
    const view = padded.subarray(2, 2 + text.length)
    expect(view instanceof Uint8Array).toBe(false)
    await expect(verify({ headers, body: view })).resolves.toEqual({ id: ID, timestamp: NOW_S })
    const buffer = new realm.ArrayBuffer(text.length)
    new realm.Uint8Array(buffer).set(encoder.encode(text))
    expect(buffer instanceof ArrayBuffer).toBe(false)
    await expect(verify({ headers, body: buffer })).resolves.toEqual({ id: ID, timestamp: NOW_S })
  })

  it('answers invalid_body for a parsed object, null, a number and a DataView instead of raw bytes', async () => {
    const { headers } = await signed('{"a":1}')
    for (const body of [{ a: 1 }, null, 42, new DataView(new ArrayBuffer(7))]) {
      const error = await expectRejected({ headers, body: body as unknown as WebhookBody }, 'invalid_body')
      expect(error.message).toMatch(/raw/)
    }
  })
})

describe('verifyWebhook: header sources', () => {
  it('reads a Fetch Headers, a plain record and a record with mixed-case names alike', async () => {
    const { headers, body } = await signed('{"a":1}')
    const sig = headers['webhook-signature']!
    const expected = { id: ID, timestamp: NOW_S }
    await expect(verify({ headers: new Headers(headers), body })).resolves.toEqual(expected)
    await expect(verify({ headers, body })).resolves.toEqual(expected)
    const mixed = { 'Webhook-Id': ID, 'WEBHOOK-TIMESTAMP': String(NOW_S), 'Webhook-Signature': sig, 'Content-Type': 'application/json' }
    await expect(verify({ headers: mixed, body })).resolves.toEqual(expected)
  })

  it('reads a record whose values are one-element lists (Node req.headersDistinct)', async () => {
    const { headers, body } = await signed('{"a":1}')
    const distinct = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key, [value]]))
    await expect(verify({ headers: distinct, body })).resolves.toEqual({ id: ID, timestamp: NOW_S })
  })

  it('ignores inherited properties of a header record', async () => {
    const { headers, body } = await signed('{"a":1}')
    const inherited = Object.create(headers) as Record<string, string>
    await expectRejected({ headers: inherited, body }, 'missing_header')
  })

  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    it(`answers duplicate_header when ${name} is a list of two values`, async () => {
      const { headers, body } = await signed('{"a":1}')
      const value = headers[name]!
      await expectRejected({ headers: { ...headers, [name]: [value, value] }, body }, 'duplicate_header')
    })

    it(`answers duplicate_header when ${name} appears under two casings in a record`, async () => {
      const { headers, body } = await signed('{"a":1}')
      const value = headers[name]!
      await expectRejected({ headers: { ...headers, [name.toUpperCase()]: value }, body }, 'duplicate_header')
    })

    it(`answers missing_header when ${name} is absent, from a record and from a Headers`, async () => {
      const { headers, body } = await signed('{"a":1}')
      const rest = Object.fromEntries(Object.entries(headers).filter(([key]) => key !== name))
      const error = await expectRejected({ headers: rest, body }, 'missing_header')
      expect(error.message).toContain(name)
      await expectRejected({ headers: new Headers(rest), body }, 'missing_header')
    })

    it(`answers missing_header when ${name} is an empty list or null`, async () => {
      const { headers, body } = await signed('{"a":1}')
      await expectRejected({ headers: { ...headers, [name]: [] }, body }, 'missing_header')
      await expectRejected({ headers: { ...headers, [name]: null } as unknown as WebhookHeaders, body }, 'missing_header')
    })
  }

  it('refuses a header appended twice to a Headers by the malformed_* code of its joined value', async () => {
    const { headers, body } = await signed('{"a":1}')
    const cases = [
      ['webhook-id', 'malformed_id'],
      ['webhook-timestamp', 'malformed_timestamp'],
      ['webhook-signature', 'malformed_signature'],
    ] as const
    for (const [name, code] of cases) {
      const twice = new Headers(headers)
      twice.append(name, headers[name]!)
      expect(twice.get(name)).toBe(`${headers[name]}, ${headers[name]}`)
      await expectRejected({ headers: twice, body }, code)
    }
  })

  it('answers missing_header when no headers object is given', async () => {
    for (const headers of [undefined, null, 'webhook-id: x', 7]) {
      await expectRejected({ headers: headers as unknown as WebhookHeaders, body: '{}' }, 'missing_header')
    }
  })

  it('answers with a WebhookVerificationError, never a TypeError or RangeError, for header values that are not text', async () => {
    const { headers, body } = await signed('{"a":1}')
    const weird: unknown[] = [
      123,
      0,
      Number.NaN,
      true,
      1n,
      Symbol('x'),
      {},
      { toString: () => headers['webhook-id'] },
      [1],
      [null],
      [headers['webhook-id'], 2],
      () => 'x',
    ]
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      for (const value of weird) {
        const error = await verify({ headers: { ...headers, [name]: value } as unknown as WebhookHeaders, body }).catch((e: unknown) => e)
        expect(error, `${name} = ${typeof value}`).toBeInstanceOf(WebhookVerificationError)
        expect((error as WebhookVerificationError).status).toBe(401)
      }
    }
  })

  it('answers the malformed_* code, not duplicate_header, for a single value that is not text', async () => {
    const { headers, body } = await signed('{"a":1}')
    await expectRejected({ headers: { ...headers, 'webhook-id': 123 } as unknown as WebhookHeaders, body }, 'malformed_id')
    await expectRejected({ headers: { ...headers, 'webhook-timestamp': NOW_S } as unknown as WebhookHeaders, body }, 'malformed_timestamp')
    await expectRejected({ headers: { ...headers, 'webhook-signature': {} } as unknown as WebhookHeaders, body }, 'malformed_signature')
  })

  it('answers with a WebhookVerificationError for a Headers-like whose get returns something other than text', async () => {
    for (const value of [42, {}, ['a', 'b'], undefined]) {
      const headers = { get: () => value } as unknown as WebhookHeaders
      await expect(verify({ headers, body: '{}' })).rejects.toBeInstanceOf(WebhookVerificationError)
    }
  })

  it('never lets anything but a WebhookVerificationError escape for arbitrary header records and bodies', async () => {
    const headerName = fc.constantFrom('webhook-id', 'Webhook-Id', 'webhook-timestamp', 'WEBHOOK-TIMESTAMP', 'webhook-signature', 'x-other')
    await fc.assert(
      fc.asyncProperty(fc.dictionary(headerName, fc.anything()), fc.oneof(fc.string(), fc.uint8Array()), async (headers, body) => {
        const error = await verify({ headers: headers as WebhookHeaders, body }).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(error).toBeInstanceOf(WebhookVerificationError)
      }),
      { numRuns: 300 },
    )
  })
})

describe('verifyWebhook: webhook-id', () => {
  for (const [label, id] of [
    ['a dot', `${ID}.1`],
    ['a comma', `${ID},${ID}`],
    ['a space', 'evt 1'],
    ['a tab', 'evt\t1'],
    ['a non-ASCII letter', 'évènement'],
    ['257 characters', 'a'.repeat(257)],
    ['nothing', ''],
  ] as const) {
    it(`answers malformed_id when the id is ${label}, even when correctly signed`, async () => {
      const { headers, body } = await signed('{"a":1}', { id })
      await expectRejected({ headers, body }, 'malformed_id')
    })
  }

  it('accepts an id of 256 visible ASCII characters', async () => {
    const id = `${'a'.repeat(250)}_-:~!@`
    expect(id).toHaveLength(256)
    const { headers, body } = await signed('{"a":1}', { id })
    await expect(verify({ headers, body })).resolves.toEqual({ id, timestamp: NOW_S })
  })
})

describe('verifyWebhook: webhook-timestamp', () => {
  const malformed = ['123abc', ' 123', '123 ', '1e9', '-5', '+5', '1.5', '0x10', '', '１２３', '1'.repeat(16), '9'.repeat(40)]
  for (const timestamp of malformed) {
    it(`answers malformed_timestamp for ${JSON.stringify(timestamp)}`, async () => {
      const body = '{"a":1}'
      const headers = headersFor(ID, timestamp, referenceSignature(TEST_SECRET, ID, timestamp, body))
      await expectRejected({ headers, body }, 'malformed_timestamp')
    })
  }

  it('signs the exact header text: a leading zero verifies when signed with it, and not when signed without', async () => {
    const body = '{"a":1}'
    const text = `0${NOW_S}`
    const withZero = headersFor(ID, text, referenceSignature(TEST_SECRET, ID, text, body))
    await expect(verify({ headers: withZero, body })).resolves.toEqual({ id: ID, timestamp: NOW_S })
    const signedWithout = headersFor(ID, text, referenceSignature(TEST_SECRET, ID, String(NOW_S), body))
    await expectRejected({ headers: signedWithout, body }, 'signature_mismatch')
  })

  it('accepts a timestamp exactly 300 s old', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: NOW_S - 300 })
    await expect(verify({ headers, body })).resolves.toEqual({ id: ID, timestamp: NOW_S - 300 })
  })

  it('accepts a timestamp exactly 300 s in the future', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: NOW_S + 300 })
    await expect(verify({ headers, body })).resolves.toEqual({ id: ID, timestamp: NOW_S + 300 })
  })

  it('answers timestamp_too_old when the timestamp is 301 s old', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: NOW_S - 301 })
    const error = await expectRejected({ headers, body }, 'timestamp_too_old')
    expect(error.message).toMatch(/clock/)
  })

  it('answers timestamp_too_new when the timestamp is 301 s in the future', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: NOW_S + 301 })
    await expectRejected({ headers, body }, 'timestamp_too_new')
  })

  it('answers timestamp_too_old for a correctly signed delivery whose signature would otherwise match', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: 0 })
    await expectRejected({ headers, body }, 'timestamp_too_old')
  })

  it('uses a default tolerance of 300 s and Date.now when no options are given', async () => {
    expect(DEFAULT_TOLERANCE_SECONDS).toBe(300)
    const fresh = await signWebhook({ secret: TEST_SECRET, body: '{}', id: ID })
    await expect(verifyWebhook({ headers: fresh.headers, body: fresh.body, secret: TEST_SECRET })).resolves.toMatchObject({ id: ID })
    const stale = await signWebhook({ secret: TEST_SECRET, body: '{}', id: ID, timestamp: Math.floor(Date.now() / 1000) - 400 })
    await expect(verifyWebhook({ headers: stale.headers, body: stale.body, secret: TEST_SECRET })).rejects.toMatchObject({
      code: 'timestamp_too_old',
    })
  })

  it('respects toleranceSeconds: 10 accepts 10 s either way and refuses 11 s', async () => {
    const body = '{"a":1}'
    for (const offset of [-10, 10]) {
      const { headers } = await signed(body, { timestamp: NOW_S + offset })
      await expect(verify({ headers, body, toleranceSeconds: 10 })).resolves.toMatchObject({ id: ID })
    }
    const old = await signed(body, { timestamp: NOW_S - 11 })
    await expectRejected({ headers: old.headers, body, toleranceSeconds: 10 }, 'timestamp_too_old')
    const future = await signed(body, { timestamp: NOW_S + 11 })
    await expectRejected({ headers: future.headers, body, toleranceSeconds: 10 }, 'timestamp_too_new')
  })

  it('respects a toleranceSeconds wider than the default: 301 s old passes with 600', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: NOW_S - 301 })
    await expect(verify({ headers, body, toleranceSeconds: 600 })).resolves.toMatchObject({ id: ID })
  })

  it('throws a TypeError naming toleranceSeconds when it is negative, NaN, infinite or not a number', async () => {
    const { headers, body } = await signed('{"a":1}')
    for (const toleranceSeconds of [-1, Number.NaN, Number.POSITIVE_INFINITY, '300']) {
      const input = { headers, body, toleranceSeconds } as unknown as VerifyCase
      await expect(verify(input)).rejects.toThrow(TypeError)
      await expect(verify(input)).rejects.toThrow(/toleranceSeconds/)
    }
  })

  it('throws a TypeError naming now when it is not a function', async () => {
    const { headers, body } = await signed('{"a":1}')
    await expect(verify({ headers, body, now: 5 as unknown as () => number })).rejects.toThrow(/now must be a function/)
  })

  it('fails closed with a TypeError when now() returns NaN or a non-number, instead of skipping the window', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: 0 })
    for (const now of [() => Number.NaN, () => '1767225600000' as unknown as number, () => undefined as unknown as number]) {
      await expect(verify({ headers, body, now })).rejects.toThrow(TypeError)
      await expect(verify({ headers, body, now })).rejects.toThrow(/now\(\) must return milliseconds/)
    }
  })
})

describe('verifyWebhook: webhook-signature', () => {
  it('verifies an UPPERCASE and a mixed-case hex signature', async () => {
    const { headers, body } = await signed('{"a":1}')
    const sig = headers['webhook-signature']!
    expect(sig).toMatch(/^[0-9a-f]{64}$/)
    await expect(verify({ headers: { ...headers, 'webhook-signature': sig.toUpperCase() }, body })).resolves.toMatchObject({ id: ID })
    const mixed = [...sig].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('')
    await expect(verify({ headers: { ...headers, 'webhook-signature': mixed }, body })).resolves.toMatchObject({ id: ID })
  })

  const shapes: [string, (sig: string) => string][] = [
    ['63 characters', (sig) => sig.slice(1)],
    ['65 characters', (sig) => `${sig}0`],
    ['a non-hex character', (sig) => `g${sig.slice(1)}`],
    ['a "v1," prefix', (sig) => `v1,${sig}`],
    ['a "sha256=" prefix', (sig) => `sha256=${sig}`],
    ['a trailing space', (sig) => `${sig} `],
    ['two signatures separated by a space', (sig) => `${sig} ${sig}`],
    ['base64 instead of hex', (sig) => Buffer.from(sig, 'hex').toString('base64')],
    ['nothing', () => ''],
  ]
  for (const [label, reshape] of shapes) {
    it(`answers malformed_signature when the signature has ${label}`, async () => {
      const { headers, body } = await signed('{"a":1}')
      const error = await expectRejected(
        { headers: { ...headers, 'webhook-signature': reshape(headers['webhook-signature']!) }, body },
        'malformed_signature',
      )
      expect(error.message).toMatch(/64 hexadecimal/)
    })
  }

  it('answers signature_mismatch when one byte of the body was changed', async () => {
    const { headers, body } = await signed('{"type":"email.bounced","data":{"id":"e1"}}')
    await expectRejected({ headers, body: body.replace('bounced', 'bouncee') }, 'signature_mismatch')
  })

  it('answers signature_mismatch when the id or timestamp header was changed after signing', async () => {
    const { headers, body } = await signed('{"a":1}')
    await expectRejected({ headers: { ...headers, 'webhook-id': `${ID.slice(0, -1)}2` }, body }, 'signature_mismatch')
    await expectRejected({ headers: { ...headers, 'webhook-timestamp': String(NOW_S - 1) }, body }, 'signature_mismatch')
  })

  it('answers signature_mismatch when the delivery was signed with another secret', async () => {
    const { headers, body } = await signed('{"a":1}', { secret: OTHER_SECRET })
    const error = await expectRejected({ headers, body }, 'signature_mismatch')
    expect(error.message).toMatch(/secret/)
  })

  it('answers signature_mismatch for a well-formed signature of all zeros', async () => {
    const { headers, body } = await signed('{"a":1}')
    await expectRejected({ headers: { ...headers, 'webhook-signature': '0'.repeat(64) }, body }, 'signature_mismatch')
  })
})

describe('verifyWebhook: several secrets (rotation)', () => {
  it('verifies a delivery signed with the old or the new secret when both are given, in either order', async () => {
    const secrets = [TEST_SECRET, OTHER_SECRET]
    for (const secret of secrets) {
      const { headers, body } = await signed('{"a":1}', { secret })
      await expect(verify({ headers, body, secret: secrets })).resolves.toEqual({ id: ID, timestamp: NOW_S })
      await expect(verify({ headers, body, secret: [...secrets].reverse() })).resolves.toEqual({ id: ID, timestamp: NOW_S })
    }
  })

  it('answers signature_mismatch when neither secret signed the delivery', async () => {
    const { headers, body } = await signed('{"a":1}', { secret: 'whsec_a_third_secret' })
    await expectRejected({ headers, body, secret: [TEST_SECRET, OTHER_SECRET] }, 'signature_mismatch')
  })
})

describe('verifyWebhook: secret validation', () => {
  /** A sparse array `[<hole>, secret]`: forEach and map skip the hole. */
  function listWithHoleAt0(secret: string): string[] {
    const list: string[] = []
    list[1] = secret
    return list
  }
  const cases: [string, unknown, RegExp][] = [
    ['an empty string', '', /secret is empty/],
    ['a leading space', ` ${TEST_SECRET}`, /white space/],
    ['a trailing space', `${TEST_SECRET} `, /white space/],
    ['a trailing newline (from a .env file)', `${TEST_SECRET}\n`, /white space.*newline/],
    ['a leading tab', `\t${TEST_SECRET}`, /white space/],
    ['an empty list', [], /empty list/],
    ['a list with an empty second entry', [TEST_SECRET, ''], /secret\[1\] is empty/],
    ['a list with a padded entry', [`${OTHER_SECRET}\r\n`], /secret\[0\] has leading or trailing white space/],
    ['a list with a hole', listWithHoleAt0(TEST_SECRET), /secret\[0\] must be a string.*undefined/],
    ['undefined (an unset environment variable)', undefined, /must be a string.*undefined.*environment variable/],
    ['null', null, /must be a string.*null/],
    ['a number', 12345, /must be a string.*number/],
    ['a list holding a number', [TEST_SECRET, 1], /secret\[1\] must be a string.*number/],
  ]
  for (const [label, secret, message] of cases) {
    it(`throws a TypeError saying what is wrong when the secret is ${label}`, async () => {
      const { headers, body } = await signed('{"a":1}')
      const error = await verifyWebhook({ headers, body, secret: secret as string, now: NOW }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as TypeError).message).toMatch(message)
      expect((error as TypeError).message).toMatch(/^\[@email-webhooks\/core\]/)
      expect((error as TypeError).message).not.toContain(TEST_SECRET)
      expect((error as TypeError).message).not.toContain(OTHER_SECRET)
    })
  }

  it('checks the secret before the request: a bad secret is a TypeError even for garbage headers', async () => {
    await expect(verifyWebhook({ headers: {}, body: '', secret: ' x' })).rejects.toBeInstanceOf(TypeError)
  })

  it('accepts a secret with white space inside it and unicode characters', async () => {
    const secret = 'sécret with spaces 🔑'
    const { headers, body } = await signed('{"a":1}', { secret })
    await expect(verify({ headers, body, secret })).resolves.toMatchObject({ id: ID })
  })
})

describe('WebhookVerificationError', () => {
  it('carries name, code, status 401 and a message; is an Error', async () => {
    const { headers, body } = await signed('{"a":1}', { timestamp: NOW_S - 301 })
    const error = await verify({ headers, body }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect(error).toBeInstanceOf(WebhookVerificationError)
    expect(error).toMatchObject({ name: 'WebhookVerificationError', code: 'timestamp_too_old', status: 401 })
    expect(String(error)).toMatch(/^WebhookVerificationError: /)
  })
})

describe('createSignedDelivery meets verifyWebhook', () => {
  it('verifies a delivery from the testing kit with TEST_SECRET', async () => {
    const delivery = await createSignedDelivery({ type: 'email.bounced', now: NOW })
    await expect(verify({ headers: delivery.headers, body: delivery.body })).resolves.toEqual({ id: delivery.event.id, timestamp: NOW_S })
  })
})
