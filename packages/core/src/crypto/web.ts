/**
 * Web Crypto implementation of the HMAC primitives, for Bun, Deno, Workers and browsers.
 * `crypto.subtle.verify` compares the MAC in constant time. No Node globals are used.
 */
import type { CryptoBackend } from './backend.js'

const MAC_BYTES = 32
const ALGORITHM = { name: 'HMAC', hash: 'SHA-256' } as const
const encoder = new TextEncoder()

function signedBytes(prefix: string, body: Uint8Array | string): Uint8Array<ArrayBuffer> {
  if (typeof body === 'string') return encoder.encode(prefix + body)
  const head = encoder.encode(prefix)
  const out = new Uint8Array(head.byteLength + body.byteLength)
  out.set(head, 0)
  out.set(body, head.byteLength)
  return out
}

function toHex(bytes: Uint8Array): string {
  let hex = ''
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0')
  return hex
}

export const backend: CryptoBackend = {
  name: 'web',
  importKey(secret: Uint8Array): Promise<CryptoKey> {
    return crypto.subtle.importKey('raw', secret as Uint8Array<ArrayBuffer>, ALGORITHM, false, ['sign', 'verify'])
  },
  async verify(key: unknown, prefix: string, body: Uint8Array | string, expected: Uint8Array): Promise<boolean> {
    if (expected.byteLength !== MAC_BYTES) return false
    return crypto.subtle.verify('HMAC', (await key) as CryptoKey, expected as Uint8Array<ArrayBuffer>, signedBytes(prefix, body))
  },
  async signHex(key: unknown, prefix: string, body: Uint8Array | string): Promise<string> {
    const mac = await crypto.subtle.sign('HMAC', (await key) as CryptoKey, signedBytes(prefix, body))
    return toHex(new Uint8Array(mac))
  },
}
