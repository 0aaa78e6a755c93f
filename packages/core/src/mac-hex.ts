/** The `webhook-signature` header's 64 hex characters as the 32 bytes of the MAC, decoded without regular expressions. */
import { backend } from '#crypto'

/** Hex characters of an HMAC-SHA256 signature. */
export const SIGNATURE_HEX_LENGTH = 64

const HEX_VALUE = (() => {
  const table = new Int8Array(128).fill(-1)
  for (let i = 0; i < 10; i++) table[48 + i] = i
  for (let i = 0; i < 6; i++) {
    table[65 + i] = 10 + i
    table[97 + i] = 10 + i
  }
  return table
})()

// node:crypto verifies synchronously, start to end, so one array can hold the expected MAC of
// every call. It is made from an ArrayBuffer: a fresh 32-byte Uint8Array lives on V8's heap,
// and handing it to C++ (timingSafeEqual) makes V8 move it off the heap first, about 0.2 µs a
// call. Web Crypto verifies asynchronously: there, each call decodes into an array of its own.
const SHARED_MAC = backend.name === 'node' ? new Uint8Array(new ArrayBuffer(SIGNATURE_HEX_LENGTH / 2)) : undefined

/** The 32 bytes of a 64-character hex signature (either case), or undefined if it is not one. */
export function decodeSignature(hex: string): Uint8Array | undefined {
  if (hex.length !== SIGNATURE_HEX_LENGTH) return undefined
  const out = SHARED_MAC ?? new Uint8Array(SIGNATURE_HEX_LENGTH / 2)
  let invalid = 0
  // A constant bound (not out.length) and a second index: about a third faster in V8.
  for (let i = 0, j = 0; i < SIGNATURE_HEX_LENGTH / 2; i++, j += 2) {
    // Non-hex characters map to -1, which makes `invalid` negative.
    const high = hex.charCodeAt(j)
    const low = hex.charCodeAt(j + 1)
    const h = high < 128 ? (HEX_VALUE[high] as number) : -1
    const l = low < 128 ? (HEX_VALUE[low] as number) : -1
    invalid |= h | l
    out[i] = (h << 4) | l
  }
  return invalid < 0 ? undefined : out
}
