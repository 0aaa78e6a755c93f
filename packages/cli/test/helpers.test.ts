// The CLI's pure parts, in process: expectations, percentiles, header and replay-file parsing,
// body facts, error messages and exit codes.
import { InvalidArgumentError } from 'commander'
import { describe, expect, it } from 'vitest'
import { EXIT, plainMessage } from '../src/lib/errors.js'
import { parseCreatedAtOption } from '../src/lib/event-data.js'
import { expectationArg, meets } from '../src/lib/expect.js'
import { parseHeaderLines, parseHeadersFile } from '../src/lib/headers.js'
import { describeBody, wholeNumber } from '../src/lib/input.js'
import { colorsWanted, visibleWidth } from '../src/lib/output.js'
import { parseReplayFile } from '../src/lib/replay-file.js'
import { exitCodeOf, type RequestRecord } from '../src/lib/report.js'
import { percentile } from '../src/lib/summary.js'

describe('expectations', () => {
  it('matches classes and exact statuses; no answer never matches', () => {
    expect(meets(204, '2xx')).toBe(true)
    expect(meets(409, '4xx')).toBe(true)
    expect(meets(409, '401')).toBe(false)
    expect(meets(401, '401')).toBe(true)
    expect(meets(undefined, '5xx')).toBe(false)
    expect(expectationArg(' 4XX ')).toBe('4xx')
    for (const bad of ['2x', '600', '4xxx', 'ok', '']) expect(() => expectationArg(bad)).toThrow(InvalidArgumentError)
  })
})

describe('option values', () => {
  it('wholeNumber takes whole numbers within bounds and says the bounds otherwise', () => {
    expect(wholeNumber(1, 10)('10')).toBe(10)
    for (const bad of ['0', '11', '1.5', '-1', ' 2', '', '1e1']) {
      expect(() => wholeNumber(1, 10)(bad)).toThrow(new InvalidArgumentError('Give a whole number from 1 to 10.'))
    }
  })

  it('--created-at keeps a date-time with an offset as written and turns a signed duration into an ISO time from now', () => {
    const now = Date.parse('2026-11-25T10:00:00Z')
    expect(parseCreatedAtOption('2026-01-02T03:04:05.6+01:00', now)).toBe('2026-01-02T03:04:05.6+01:00')
    expect(parseCreatedAtOption('-5m', now)).toBe('2026-11-25T09:55:00.000Z')
    expect(parseCreatedAtOption('+30s', now)).toBe('2026-11-25T10:00:30.000Z')
    expect(parseCreatedAtOption('-2d', now)).toBe('2026-11-23T10:00:00.000Z')
    expect(parseCreatedAtOption('2026-11-20', now)).toBe('2026-11-20T00:00:00Z')
    expect(parseCreatedAtOption('-3652d', now)).toBe('2016-11-25T10:00:00.000Z')
    for (const bad of ['5m', '-5', '-5w', 'yesterday', '2026-11-32', '2026-11-20T08:00:00', '-99999999999999d', '+3653d', '-3653d']) {
      expect(() => parseCreatedAtOption(bad, now), bad).toThrow(InvalidArgumentError)
    }
  })
})

describe('colours', () => {
  const tty = { isTTY: true }
  const pipe = { isTTY: false }
  it('--no-color first, then FORCE_COLOR (0 or false turn it off), then NO_COLOR, then a terminal that is not dumb', () => {
    expect(colorsWanted(tty, {}, undefined)).toBe(true)
    expect(colorsWanted(pipe, {}, undefined)).toBe(false)
    expect(colorsWanted(tty, { TERM: 'dumb' }, undefined)).toBe(false)
    expect(colorsWanted(tty, { NO_COLOR: '1' }, undefined)).toBe(false)
    expect(colorsWanted(tty, { NO_COLOR: '' }, undefined)).toBe(true)
    expect(colorsWanted(pipe, { FORCE_COLOR: '1' }, undefined)).toBe(true)
    expect(colorsWanted(pipe, { FORCE_COLOR: '' }, undefined)).toBe(true)
    expect(colorsWanted(pipe, { FORCE_COLOR: '1', NO_COLOR: '1' }, undefined)).toBe(true)
    expect(colorsWanted(tty, { FORCE_COLOR: '0' }, undefined)).toBe(false)
    expect(colorsWanted(tty, { FORCE_COLOR: 'false' }, undefined)).toBe(false)
    expect(colorsWanted(tty, { FORCE_COLOR: '1' }, false)).toBe(false)
    expect(colorsWanted(tty, {}, true)).toBe(true)
  })

  it('measures a cell on the screen, without its colour codes', () => {
    expect(visibleWidth('\u001b[31mno\u001b[39m')).toBe(2)
    expect(visibleWidth('\u001b[1m\u001b[32mdone\u001b[39m\u001b[22m')).toBe(4)
  })
})

describe('percentile', () => {
  it('takes the nearest rank of sorted values', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(percentile(values, 50)).toBe(50)
    expect(percentile(values, 99)).toBe(99)
    expect(percentile([7], 99)).toBe(7)
    expect(percentile([1, 2, 3, 4], 50)).toBe(2)
    expect(percentile([], 50)).toBeNull()
  })
})

describe('captured headers', () => {
  it('reads raw HTTP lines: skips the request line, keeps a repeated header as a list, stops at the blank line', () => {
    const record = parseHeaderLines(['POST /hooks HTTP/1.1', 'Webhook-Id: a', 'webhook-id: b', 'X-Empty:', '', 'body: not a header'], 'f')
    expect(record).toEqual({ 'webhook-id': ['a', 'b'], 'x-empty': '' })
    expect(() => parseHeaderLines(['no colon here'], 'f')).toThrow('f, line 1: expected "Name: value".')
  })

  it('reads a JSON object of headers, names in any case', () => {
    expect(parseHeadersFile('{"Webhook-Timestamp":"1","webhook-signature":["x"]}', 'h.json')).toEqual({
      'webhook-timestamp': '1',
      'webhook-signature': 'x',
    })
    expect(() => parseHeadersFile('{"a":1}', 'h.json')).toThrow('must be a string')
  })
})

describe('replay file', () => {
  it('accepts a raw body string, a body object and a bare envelope; the recorded webhook-id wins', () => {
    const raw = '{"id":"from-body","type":"email.bounced"}'
    const text = [
      JSON.stringify({ body: raw, headers: { 'WEBHOOK-ID': 'from-header', 'Content-Type': 'application/json; charset=utf-8' } }),
      '   ',
      JSON.stringify({ body: { id: 'b', type: 'email.queued' } }),
      '{ "id": "c", "type": "x.y" }',
    ].join('\n')
    expect(parseReplayFile(text)).toEqual([
      { line: 1, webhookId: 'from-header', type: 'email.bounced', body: raw, contentType: 'application/json; charset=utf-8' },
      { line: 3, webhookId: 'b', type: 'email.queued', body: '{"id":"b","type":"email.queued"}', contentType: 'application/json' },
      { line: 4, webhookId: 'c', type: 'x.y', body: '{ "id": "c", "type": "x.y" }', contentType: 'application/json' },
    ])
  })

  it('names the first bad line', () => {
    expect(() => parseReplayFile('{"id":"a","type":"t"}\n[1]')).toThrow('line 2: expected a JSON object.')
    expect(() => parseReplayFile('{"body":"not json"}')).toThrow('line 1: no webhook-id header and no string "id" in the body.')
    expect(() => parseReplayFile('{"body":42}')).toThrow('line 1: "body" must be')
    expect(() => parseReplayFile('\n\n')).toThrow('holds no deliveries')
  })
})

describe('body facts', () => {
  it('finds the string id and type of a JSON object body, as text or bytes; nothing otherwise', () => {
    const text = '{"id":"evt_1","type":"email.bounced","data":{}}'
    expect(describeBody(text)).toEqual({ value: { id: 'evt_1', type: 'email.bounced', data: {} }, id: 'evt_1', type: 'email.bounced' })
    expect(describeBody(new TextEncoder().encode(text))).toEqual(describeBody(text))
    expect(describeBody('{"id":1,"type":null}')).toEqual({ value: { id: 1, type: null } })
    for (const other of ['[{"id":"a"}]', 'null', '"id"', 'not json', '']) expect(describeBody(other)).toEqual({})
  })
})

describe('messages and exit codes', () => {
  it("drops core's [package] prefix from a message", () => {
    expect(plainMessage(new TypeError('[@email-webhooks/core] the secret is too short.'))).toBe('the secret is too short.')
    expect(plainMessage(new Error('no prefix [here] '))).toBe('no prefix [here] ')
  })

  it('gives 0 when every answer was expected, else 3 when any request got no answer, else 1', () => {
    const record = (status: number | undefined): RequestRecord => ({
      label: 'send',
      webhookId: 'evt_1',
      expected: '2xx',
      reason: 'test',
      answer: status === undefined ? { latencyMs: 1, failure: 'ECONNREFUSED' } : { status, latencyMs: 1 },
    })
    expect(exitCodeOf([record(200), record(204)])).toBe(EXIT.ok)
    expect(exitCodeOf([record(200), record(500)])).toBe(EXIT.unexpected)
    expect(exitCodeOf([record(500), record(undefined)])).toBe(EXIT.unreachable)
  })
})
