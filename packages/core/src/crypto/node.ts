/** node:crypto implementation of the HMAC primitives: createHmac and timingSafeEqual. */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { CryptoBackend } from './backend.js'

const MAC_BYTES = 32

function mac(key: unknown, prefix: string, body: Uint8Array | string): Buffer {
  const hmac = createHmac('sha256', key as Buffer)
  hmac.update(prefix, 'utf8')
  if (typeof body === 'string') hmac.update(body, 'utf8')
  else hmac.update(body)
  return hmac.digest()
}

export const backend: CryptoBackend = {
  name: 'node',
  importKey(secret: Uint8Array): Buffer {
    return Buffer.from(secret)
  },
  verify(key: unknown, prefix: string, body: Uint8Array | string, expected: Uint8Array): boolean {
    if (expected.byteLength !== MAC_BYTES) return false
    return timingSafeEqual(mac(key, prefix, body), expected)
  },
  signHex(key: unknown, prefix: string, body: Uint8Array | string): string {
    return mac(key, prefix, body).toString('hex')
  },
}
