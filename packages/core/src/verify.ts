/**
 * Signature verification: HMAC-SHA256 over `webhook-id + "." + webhook-timestamp + "."`
 * followed by the exact raw body bytes, checked in constant time, within a symmetric
 * timestamp window. Cheap shape and window checks run before any HMAC is computed.
 */
import { backend } from '#crypto'
import { WebhookVerificationError } from './errors.js'
import { readWebhookHeaders, type WebhookHeaders } from './headers.js'
import { decodeSignature } from './mac-hex.js'
import { type PreparedSecrets, prepareSecrets, type WebhookSecret } from './secret.js'

/** How far (seconds, inclusive) a timestamp may be from the current time, past or future. */
export const DEFAULT_TOLERANCE_SECONDS = 300
const MAX_ID_LENGTH = 256
const MAX_TIMESTAMP_DIGITS = 15
// Visible ASCII without '.' and ',': the id is part of the signed text and a comma is how
// proxies join a repeated header. (Character loops here: cheaper than regular expressions.)
function isValidId(id: string): boolean {
  const length = id.length
  if (length === 0 || length > MAX_ID_LENGTH) return false
  for (let i = 0; i < length; i++) {
    const code = id.charCodeAt(i)
    if (code < 0x21 || code > 0x7e || code === 0x2c || code === 0x2e) return false
  }
  return true
}

/** The value of 1–15 ASCII digits, or -1 for anything else. */
function parseTimestamp(text: string): number {
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

/** The raw request body: the exact bytes received, or a string of them. */
export type WebhookBody = string | Uint8Array | ArrayBuffer

/** Input of {@link verifyWebhook}. */
export interface VerifyWebhookInput {
  /** The request headers: a Fetch `Headers` or a record such as Node's `req.headers`. */
  headers: WebhookHeaders
  /** The raw body, exactly as received. A parsed object is refused. */
  body: WebhookBody
  /** The endpoint secret, or several during rotation (any match verifies). */
  secret: WebhookSecret
  /** Allowed distance of `webhook-timestamp` from now, in seconds, inclusive. Default 300. */
  toleranceSeconds?: number
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number
}

/** What a successful verification vouches for. */
export interface VerifiedWebhook {
  /** The `webhook-id` header: the event id, used as the dedup key. */
  id: string
  /** The `webhook-timestamp` header, in seconds since the epoch. */
  timestamp: number
}

/** Options fixed once per receiver; see {@link createVerifier}. */
export interface VerifierOptions {
  secret: WebhookSecret
  toleranceSeconds?: number
  now?: () => number
}

/**
 * A verifier bound to prepared secrets and options: the verified delivery, at once where the
 * backend answers synchronously (node:crypto), or a promise of it (Web Crypto). Throws (or rejects)
 * with the refusal.
 */
export type Verifier = (headers: WebhookHeaders, body: WebhookBody) => VerifiedWebhook | Promise<VerifiedWebhook>

function toBytes(body: WebhookBody): Uint8Array | string {
  if (typeof body === 'string' || body instanceof Uint8Array) return body
  // Views and buffers from another realm (vm, jsdom, a worker's transfer) fail `instanceof`.
  if (ArrayBuffer.isView(body) && Object.prototype.toString.call(body) === '[object Uint8Array]') {
    return new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  }
  if (body instanceof ArrayBuffer || Object.prototype.toString.call(body) === '[object ArrayBuffer]') {
    return new Uint8Array(body as ArrayBuffer)
  }
  const kind = body === null ? 'null' : typeof body === 'object' ? 'an object (already parsed?)' : typeof body
  throw new WebhookVerificationError(
    'invalid_body',
    `The body must be the raw request bytes (string, Uint8Array or ArrayBuffer), got ${kind}. If a JSON parser ran first, give the verifier the raw body instead: re-serialising a parsed body does not reproduce the signed bytes.`,
  )
}

/** Checks tolerance and clock options; throws a `TypeError` naming the bad option. */
export function assertVerifierOptions(toleranceSeconds: unknown, now: unknown): void {
  if (
    toleranceSeconds !== undefined &&
    (typeof toleranceSeconds !== 'number' || !(toleranceSeconds >= 0) || !Number.isFinite(toleranceSeconds))
  ) {
    throw new TypeError('[@email-webhooks/core] toleranceSeconds must be a finite number of seconds ≥ 0 (default 300).')
  }
  if (now !== undefined && typeof now !== 'function') {
    throw new TypeError('[@email-webhooks/core] now must be a function returning milliseconds since the epoch (like Date.now).')
  }
}

/**
 * Builds a verifier with secrets validated and imported once; the receiver uses this.
 * @throws {TypeError} when a secret or an option is invalid.
 */
export function createVerifier(options: VerifierOptions): Verifier {
  const prepared = prepareSecrets(options.secret)
  assertVerifierOptions(options.toleranceSeconds, options.now)
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  const now = options.now ?? Date.now
  return function verify(headers, body) {
    return verifyNow(headers, body, prepared, tolerance, now)
  }
}

/**
 * The verified delivery, or a promise of it when the backend answers with one (Web Crypto); throws
 * the refusal. node:crypto answers synchronously: then no promise is made at all (the receiver
 * saves an await per request), and no extra await per key.
 */
function verifyNow(
  headers: WebhookHeaders,
  body: WebhookBody,
  prepared: PreparedSecrets,
  tolerance: number,
  now: () => number,
): VerifiedWebhook | Promise<VerifiedWebhook> {
  const { id, timestamp, bytes, mac, prefix } = checkShape(headers, body, tolerance, now)
  const verified: VerifiedWebhook = { id, timestamp }
  const keys = prepared.keys
  // Web Crypto answers with a promise; then the keys are tried one after another.
  for (let index = 0; index < keys.length; index++) {
    const match = backend.verify(keys[index], prefix, bytes, mac)
    if (typeof match !== 'boolean') return verifyRemaining(match, keys, index, prefix, bytes, mac, verified)
    if (match) return verified
  }
  throw mismatch()
}

/** {@link verifyNow} as a promise that rejects with the refusal. */
function verifyPrepared(
  headers: WebhookHeaders,
  body: WebhookBody,
  prepared: PreparedSecrets,
  tolerance: number,
  now: () => number,
): Promise<VerifiedWebhook> {
  try {
    const verified = verifyNow(headers, body, prepared, tolerance, now)
    return verified instanceof Promise ? verified : Promise.resolve(verified)
  } catch (error) {
    return Promise.reject(error)
  }
}

async function verifyRemaining(
  first: Promise<boolean>,
  keys: readonly unknown[],
  index: number,
  prefix: string,
  bytes: Uint8Array | string,
  mac: Uint8Array,
  verified: VerifiedWebhook,
): Promise<VerifiedWebhook> {
  if (await first) return verified
  for (let next = index + 1; next < keys.length; next++) {
    if (await backend.verify(keys[next], prefix, bytes, mac)) return verified
  }
  throw mismatch()
}

function mismatch(): WebhookVerificationError {
  return new WebhookVerificationError(
    'signature_mismatch',
    "The signature does not match. Check that the secret is this endpoint's signing secret, and that the body given to the verifier is the raw request body (not parsed and re-serialised, not altered by a proxy).",
  )
}

interface CheckedShape {
  id: string
  timestamp: number
  bytes: Uint8Array | string
  mac: Uint8Array
  prefix: string
}

/** Every check that needs no HMAC: header shapes and the time window. Throws on the first failure. */
function checkShape(headers: WebhookHeaders, body: WebhookBody, tolerance: number, now: () => number): CheckedShape {
  const { id, timestamp: timestampText, signature } = readWebhookHeaders(headers)
  if (!isValidId(id)) {
    throw new WebhookVerificationError(
      'malformed_id',
      `The webhook-id header must be 1–${MAX_ID_LENGTH} visible ASCII characters without '.', ',' or spaces (the event UUID).`,
    )
  }
  const timestamp = parseTimestamp(timestampText)
  if (timestamp < 0) {
    throw new WebhookVerificationError(
      'malformed_timestamp',
      'The webhook-timestamp header must be Unix time in whole seconds, digits only (1–15 digits).',
    )
  }
  const mac = decodeSignature(signature)
  if (mac === undefined) {
    throw new WebhookVerificationError(
      'malformed_signature',
      signature.length === 0
        ? 'The webhook-signature header is present but empty; it must be exactly 64 hexadecimal characters (HMAC-SHA256). Check that a proxy or a test client does not blank it.'
        : 'The webhook-signature header must be exactly 64 hexadecimal characters (HMAC-SHA256). Check that no prefix such as "v1," or "sha256=" was added.',
    )
  }

  const nowMs = now()
  // Fail closed: with NaN every window comparison is false and any timestamp would pass.
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
    throw new TypeError(
      `[@email-webhooks/core] now() must return milliseconds since the epoch (like Date.now), got ${typeof nowMs === 'number' ? nowMs : typeof nowMs}.`,
    )
  }
  const age = Math.floor(nowMs / 1000) - timestamp
  if (age > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_too_old',
      `The webhook-timestamp is more than ${tolerance} s in the past. Check this server's clock (NTP); old deliveries are refused to stop replays.`,
      { skewSeconds: age },
    )
  }
  if (-age > tolerance) {
    // 13 digits near now/1000: the sender (or a test) put milliseconds where seconds belong.
    const milliseconds = Math.abs(Math.floor(timestamp / 1000) - Math.floor(nowMs / 1000)) <= tolerance
    throw new WebhookVerificationError(
      'timestamp_too_new',
      milliseconds
        ? 'The webhook-timestamp looks like milliseconds since the epoch; it must be Unix time in whole seconds. If you sign test deliveries yourself, divide Date.now() by 1000 and round down.'
        : `The webhook-timestamp is more than ${tolerance} s in the future. Check this server's clock (NTP).`,
      milliseconds ? undefined : { skewSeconds: age },
    )
  }

  return { id, timestamp, bytes: toBytes(body), mac, prefix: `${id}.${timestampText}.` }
}

/**
 * Verifies a delivery's signature and timestamp against the raw body. No JSON is parsed.
 *
 * @param input.headers Fetch `Headers` or a header record (names case-insensitive; a repeated header is refused).
 * @param input.body The raw body: string, Uint8Array (any view) or ArrayBuffer.
 * @param input.secret One secret or several (any match verifies).
 * @param input.toleranceSeconds Allowed clock distance in seconds, inclusive; default 300.
 * @param input.now Clock in milliseconds; default `Date.now`.
 * @returns The verified `webhook-id` and timestamp.
 * @throws {WebhookVerificationError} with a `code` such as `signature_mismatch` or `timestamp_too_old`.
 * @throws {TypeError} when the secret or an option is invalid (a programming error, not a bad request).
 * @example
 * const { id } = await verifyWebhook({ headers: request.headers, body: await request.arrayBuffer(), secret })
 */
export function verifyWebhook(input: VerifyWebhookInput): Promise<VerifiedWebhook> {
  try {
    const prepared = prepareSecrets(input.secret)
    assertVerifierOptions(input.toleranceSeconds, input.now)
    return verifyPrepared(input.headers, input.body, prepared, input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS, input.now ?? Date.now)
  } catch (error) {
    return Promise.reject(error)
  }
}
