/** Body-size helpers shared by the fetch handler and the adapters. */

const DIGITS = /^[0-9]+$/

/**
 * A `content-length` value in bytes; undefined when absent or not plain digits (HTTP servers
 * refuse such requests before they reach us, and the body is then read under the limit anyway).
 */
export function declaredLength(contentLength: string | null | undefined): number | undefined {
  return typeof contentLength === 'string' && DIGITS.test(contentLength) ? Number(contentLength) : undefined
}

/** True when a `content-length` header value announces more than `maxBytes`; absent or invalid values are false. */
export function declaredLengthExceeds(contentLength: string | null | undefined, maxBytes: number): boolean {
  const declared = declaredLength(contentLength)
  return declared !== undefined && declared > maxBytes
}
