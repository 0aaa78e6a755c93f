/** Which crypto backend the `#crypto` import condition chose for this runtime, for diagnostics and tests. */
import { backend } from '#crypto'

/** Which HMAC implementation this runtime loaded: `'node'` (node:crypto) or `'web'` (Web Crypto). */
export function cryptoBackendName(): 'node' | 'web' {
  return backend.name
}
