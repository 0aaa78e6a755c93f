/**
 * The HMAC-SHA256 primitives the verifier needs. Two implementations exist: `node.ts`
 * (node:crypto, selected by the package's `node` import condition) and `web.ts` (Web Crypto,
 * everywhere else). Both take a secret already encoded as UTF-8 bytes.
 */
export interface CryptoBackend {
  /** Which implementation this is, for diagnostics and tests. */
  readonly name: 'node' | 'web'
  /** Turns secret bytes into a reusable key (a Buffer on Node, a CryptoKey on the web). */
  importKey(secret: Uint8Array): unknown
  /** Constant-time check that `mac` (32 bytes) is HMAC(key, prefix ++ body). */
  verify(key: unknown, prefix: string, body: Uint8Array | string, mac: Uint8Array): boolean | Promise<boolean>
  /** HMAC(key, prefix ++ body) as 64 lowercase hex characters. */
  signHex(key: unknown, prefix: string, body: Uint8Array | string): string | Promise<string>
}
