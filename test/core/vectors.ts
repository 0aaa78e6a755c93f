/**
 * The HMAC test vectors (16: eleven bodies, five secrets), shared by the Node test of both
 * crypto backends (crypto-backends.test.ts) and the Bun and Deno runs (test/runtimes).
 * Runtime-neutral: no Node APIs, so Bun and Deno import it as it is.
 */
import { TEST_SECRET } from '@email-webhooks/core/testing'

export type WireBody = { kind: 'string'; text: string } | { kind: 'bytes'; hex: string } | { kind: 'view'; hex: string; pad: number }

export interface Vector {
  name: string
  secret: string
  id: string
  timestamp: number
  body: WireBody
}

const encoder = new TextEncoder()

export function toHex(bytes: Uint8Array): string {
  let hex = ''
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0')
  return hex
}

export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}

const text = (value: string): WireBody => ({ kind: 'string', text: value })
const bytes = (value: string | Uint8Array): WireBody => ({
  kind: 'bytes',
  hex: toHex(typeof value === 'string' ? encoder.encode(value) : value),
})

/** A view is surrounded by `pad` bytes of 0x5a on each side, so its byteOffset is not zero. */
export function decodeBody(body: WireBody): string | Uint8Array {
  if (body.kind === 'string') return body.text
  const raw = fromHex(body.hex)
  if (body.kind === 'bytes') return raw
  const backing = new Uint8Array(raw.byteLength + 2 * body.pad).fill(0x5a)
  backing.set(raw, body.pad)
  return backing.subarray(body.pad, body.pad + raw.byteLength)
}

export function bodyBytes(body: WireBody): Uint8Array {
  const decoded = decodeBody(body)
  return typeof decoded === 'string' ? encoder.encode(decoded) : decoded
}

export const SECRETS: string[] = [TEST_SECRET, 'sécret-🔑-ключ-秘密', 'secret with inner spaces', 'k'.repeat(200), 'x']
export const IDS: string[] = ['019b7a00-0000-7000-8000-000000000001', 'msg_2KWPBgLlAfxdpx2AI54pPJ85f1w', 'x']
const TIMESTAMPS = [1_767_225_600, 1, 999_999_999_999_999]
const BODIES: [string, WireBody][] = [
  ['invalid UTF-8 bytes', bytes(Uint8Array.of(0x7b, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x7d))],
  ['emoji as a string', text('{"subject":"📬 ✉️ 👍🏽 déjà"}')],
  ['emoji as bytes', bytes('{"subject":"📬 ✉️ 👍🏽 déjà"}')],
  ['CRLF line endings', text('{\r\n  "a": 1\r\n}\r\n')],
  ['a BOM in a string', text('\uFEFF{"a":1}')],
  ['a BOM as bytes', bytes(Uint8Array.of(0xef, 0xbb, 0xbf, 0x7b, 0x7d))],
  ['an empty string', text('')],
  ['empty bytes', bytes('')],
  ['a lone surrogate in a string', text('{"s":"\uD800"}')],
  ['a view with a non-zero byteOffset', { kind: 'view', hex: toHex(encoder.encode('{"a":"view"}')), pad: 5 }],
  ['64 KiB', text('x'.repeat(65_536))],
]

export const VECTORS: Vector[] = [
  ...BODIES.map(([name, body], i) => ({
    name: `body: ${name}`,
    secret: SECRETS[i % SECRETS.length]!,
    id: IDS[i % IDS.length]!,
    timestamp: TIMESTAMPS[i % TIMESTAMPS.length]!,
    body,
  })),
  ...SECRETS.map((secret, i) => ({
    name: `secret #${i} (${secret.length} chars)`,
    secret,
    id: IDS[0]!,
    timestamp: TIMESTAMPS[0]!,
    body: text('{"id":"019b7a00-0000-7000-8000-000000000001","type":"email.queued"}'),
  })),
]
