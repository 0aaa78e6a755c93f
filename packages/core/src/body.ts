/** Body-size helpers shared by the fetch handler and the adapters. */

/** True when a `content-length` header value announces more than `maxBytes`; absent or invalid values are false. */
export function declaredLengthExceeds(contentLength: string | null | undefined, maxBytes: number): boolean {
  if (contentLength === null || contentLength === undefined) return false
  const declared = Number(contentLength)
  return Number.isFinite(declared) && declared > maxBytes
}
