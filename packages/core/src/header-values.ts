/** The checks of the `webhook-id` and `webhook-timestamp` header values (verify.ts runs them before any HMAC). */

/** Longest `webhook-id` accepted. */
export const MAX_ID_LENGTH = 256
const MAX_TIMESTAMP_DIGITS = 15
// Visible ASCII without '.' and ',': the id is part of the signed text and a comma is how
// proxies join a repeated header. (Character loops here: cheaper than regular expressions.)
export function isValidId(id: string): boolean {
  const length = id.length
  if (length === 0 || length > MAX_ID_LENGTH) return false
  for (let i = 0; i < length; i++) {
    const code = id.charCodeAt(i)
    if (code < 0x21 || code > 0x7e || code === 0x2c || code === 0x2e) return false
  }
  return true
}

/** The value of 1–15 ASCII digits, or -1 for anything else. */
export function parseTimestamp(text: string): number {
  const length = text.length
  if (length === 0 || length > MAX_TIMESTAMP_DIGITS) return -1
  let value = 0
  for (let i = 0; i < length; i++) {
    const digit = text.charCodeAt(i) - 48
    if (digit < 0 || digit > 9) return -1
    value = value * 10 + digit
  }
  return value
}
