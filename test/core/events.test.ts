/**
 * parseEnvelope and the event type list: strict on the envelope's shape, lenient on text
 * encoding and unknown fields, safe against prototype keys.
 */
import { EMAIL_EVENT_TYPES, isEmailEvent, isEmailEventType, parseEnvelope, WebhookVerificationError } from '@email-webhooks/core'
import { describe, expect, it } from 'vitest'

const ID = '019b7a00-0000-7000-8000-000000000001'
const EMAIL_ID = '019b7a00-0000-7000-8001-000000000001'
const encoder = new TextEncoder()

const envelope = (overrides: Record<string, unknown> = {}) => ({
  id: ID,
  type: 'email.bounced',
  created_at: '2026-01-01T00:00:00.000Z',
  data: { id: EMAIL_ID },
  ...overrides,
})

function expectInvalid(body: string | Uint8Array, expectedId = ID): WebhookVerificationError {
  let caught: unknown
  try {
    parseEnvelope(body, expectedId)
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(WebhookVerificationError)
  const error = caught as WebhookVerificationError
  expect({ name: error.name, code: error.code, status: error.status }).toEqual({
    name: 'WebhookVerificationError',
    code: 'invalid_envelope',
    status: 400,
  })
  return error
}

describe('parseEnvelope', () => {
  it('returns a valid envelope with its unknown extra fields kept, from a string, bytes or an ArrayBuffer', () => {
    const value = envelope({ api_version: 'v1', data: { id: EMAIL_ID, smtp_response: '550 5.1.1', nested: { a: [1] } } })
    const json = JSON.stringify(value)
    expect(parseEnvelope(json, ID)).toEqual(value)
    expect(parseEnvelope(encoder.encode(json), ID)).toEqual(value)
    expect(parseEnvelope(encoder.encode(json).buffer, ID)).toEqual(value)
  })

  it('accepts an unknown event type whose data has no id', () => {
    const value = envelope({ type: 'organization.updated', data: { organization_id: 'org_1' } })
    expect(parseEnvelope(JSON.stringify(value), ID)).toEqual(value)
  })

  it('parses only the bytes of a Uint8Array view, not its backing buffer', () => {
    const json = encoder.encode(JSON.stringify(envelope()))
    const backing = new Uint8Array(json.byteLength + 8).fill(0x20)
    backing.set(json, 4)
    backing[0] = 0x5b // a '[' outside the view would make the whole buffer invalid JSON
    expect(parseEnvelope(backing.subarray(4, 4 + json.byteLength), ID)).toEqual(envelope())
  })

  const invalid: [string, string][] = [
    ['the body is not JSON', 'not json'],
    ['the body is empty', ''],
    ['the body is a JSON array', JSON.stringify([envelope()])],
    ['the body is JSON null', 'null'],
    ['the body is a JSON string', JSON.stringify(JSON.stringify(envelope()))],
    ['id is missing', JSON.stringify(envelope({ id: undefined }))],
    ['id is a number', JSON.stringify(envelope({ id: 1 }))],
    ['id differs from webhook-id', JSON.stringify(envelope({ id: '019b7a00-0000-7000-8000-000000000002' }))],
    ['type is missing', JSON.stringify(envelope({ type: undefined }))],
    ['type is empty', JSON.stringify(envelope({ type: '' }))],
    ['type is not a string', JSON.stringify(envelope({ type: ['email.bounced'] }))],
    ['created_at is missing', JSON.stringify(envelope({ created_at: undefined }))],
    ['created_at is a number', JSON.stringify(envelope({ created_at: 1_767_225_600 }))],
    ['data is missing', JSON.stringify(envelope({ data: undefined }))],
    ['data is null', JSON.stringify(envelope({ data: null }))],
    ['data is an array', JSON.stringify(envelope({ data: [EMAIL_ID] }))],
    ['data is a string', JSON.stringify(envelope({ data: EMAIL_ID }))],
    ['a known email type has no data.id', JSON.stringify(envelope({ data: { email_id: EMAIL_ID } }))],
    ['a known email type has a numeric data.id', JSON.stringify(envelope({ type: 'email.queued', data: { id: 7 } }))],
    ['the JSON is nested 100,000 levels deep', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
  ]
  for (const [label, body] of invalid) {
    it(`answers invalid_envelope (400) when ${label}`, () => {
      expectInvalid(body)
      expectInvalid(encoder.encode(body))
    })
  }

  it('names the mismatch when the envelope id differs from webhook-id, without echoing the body', () => {
    const body = JSON.stringify(envelope({ data: { id: EMAIL_ID, secret_note: 'do-not-echo-this' } }))
    const error = expectInvalid(body, 'another-id')
    expect(error.message).toMatch(/webhook-id/)
    expect(error.message).not.toContain('do-not-echo-this')
    expect(error.message).not.toContain(ID)
  })

  it('turns a JSON SyntaxError into invalid_envelope without keeping it, since its message quotes the body', () => {
    const error = expectInvalid('not json do-not-echo-this')
    expect(error.cause).toBeUndefined()
    expect(String(error.message)).not.toContain('do-not-echo-this')
  })

  it('parses a body that starts with a UTF-8 BOM, given as bytes or as a string', () => {
    const json = JSON.stringify(envelope())
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode(json)])
    expect(parseEnvelope(withBom, ID)).toEqual(envelope())
    expect(parseEnvelope(`\uFEFF${json}`, ID)).toEqual(envelope())
  })

  it('replaces invalid UTF-8 inside a string value with U+FFFD instead of refusing the event', () => {
    const [head, tail] = JSON.stringify(envelope({ data: { id: EMAIL_ID, subject: 'AB' } })).split('AB') as [string, string]
    const body = new Uint8Array([...encoder.encode(`${head}A`), 0xff, 0xc3, ...encoder.encode(`B${tail}`)])
    const event = parseEnvelope(body, ID)
    expect(event.data.subject).toBe('A\uFFFD\uFFFDB')
    expect(event.data.id).toBe(EMAIL_ID)
  })

  it('leaves Object.prototype untouched by __proto__ and constructor keys in data and at the top level', () => {
    const body = `{"id":"${ID}","type":"email.bounced","created_at":"2026-01-01T00:00:00Z","__proto__":{"polluted":1},"data":{"id":"${EMAIL_ID}","__proto__":{"polluted":2},"constructor":{"prototype":{"polluted":3}}}}`
    const event = parseEnvelope(body, ID)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.prototype).not.toHaveProperty('polluted')
    expect(Object.getPrototypeOf(event)).toBe(Object.prototype)
    expect(Object.getPrototypeOf(event.data)).toBe(Object.prototype)
    expect(Object.hasOwn(event.data, '__proto__')).toBe(true)
    expect(event.data.constructor).toEqual({ prototype: { polluted: 3 } })
    expect(event.data.id).toBe(EMAIL_ID)
  })
})

describe('EMAIL_EVENT_TYPES', () => {
  it('lists the 11 email event types of SPEC.md, in its order', () => {
    expect(EMAIL_EVENT_TYPES).toEqual([
      'email.queued',
      'email.submitted',
      'email.deferred',
      'email.uncertain',
      'email.rejected',
      'email.recipient_accepted',
      'email.recipient_deferred',
      'email.recipient_resubmitted',
      'email.bounced',
      'email.submission_recovered',
      'email.complained',
    ])
  })
})

describe('isEmailEventType and isEmailEvent', () => {
  it('is true for each of the 11 types and false for unknown, differently cased or prototype names', () => {
    for (const type of EMAIL_EVENT_TYPES) expect(isEmailEventType(type), type).toBe(true)
    for (const type of [
      'email.opened',
      'Email.Bounced',
      'email.bounced ',
      'email',
      '',
      'organization.updated',
      'constructor',
      '__proto__',
      'toString',
    ]) {
      expect(isEmailEventType(type), type).toBe(false)
    }
  })

  it('recognises a parsed known event and not an unknown one', () => {
    expect(isEmailEvent(parseEnvelope(JSON.stringify(envelope()), ID))).toBe(true)
    expect(isEmailEvent(parseEnvelope(JSON.stringify(envelope({ type: 'organization.updated' })), ID))).toBe(false)
  })
})
