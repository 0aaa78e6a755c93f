/**
 * Signature verification: HMAC-SHA256 over `webhook-id + "." + webhook-timestamp + "."`
 * followed by the exact raw body bytes, checked in constant time, within a symmetric
 * timestamp window. Cheap shape and window checks run before any HMAC is computed.
 */
import { backend } from '#crypto'
import { WebhookVerificationError } from './errors.js'
import { isValidId, MAX_ID_LENGTH, parseTimestamp } from './header-values.js'
import { readWebhookHeaders, type WebhookHeaders } from './headers.js'
import { type PreparedSecrets, prepareSecrets, type WebhookSecret } from './secret.js'

/** How far (seconds, inclusive) a timestamp may be from the current time, past or future. */
export const DEFAULT_TOLERANCE_SECONDS = 300
const SIGNATURE_HEX_LENGTH = 64

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
function decodeSignature(hex: string): Uint8Array | undefined {
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
    return verifyPrepared(headers, body, prepared, tolerance, now)
  }
}

/**
 * The verified delivery, or a promise of it when the backend answers with one (Web Crypto); throws
 * the refusal. node:crypto answers synchronously: then no promise is made at all (the receiver
 * saves an await per request), and no extra await per key.
 */
function verifyPrepared(
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

/** {@link verifyPrepared} as a promise that rejects with the refusal. */
function verifyAsPromise(
  headers: WebhookHeaders,
  body: WebhookBody,
  prepared: PreparedSecrets,
  tolerance: number,
  now: () => number,
): Promise<VerifiedWebhook> {
  try {
    const verified = verifyPrepared(headers, body, prepared, tolerance, now)
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
    return verifyAsPromise(input.headers, input.body, prepared, input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS, input.now ?? Date.now)
  } catch (error) {
    return Promise.reject(error)
  }
}
