/**
 * Signature verification: HMAC-SHA256 over `webhook-id + "." + webhook-timestamp + "."`
 * followed by the exact raw body bytes, checked in constant time, within a symmetric
 * timestamp window. Cheap shape and window checks run before any HMAC is computed.
 */
import { backend } from '#crypto'
import { WebhookVerificationError } from './errors.js'
import { readWebhookHeaders, type WebhookHeaders } from './headers.js'
import { type PreparedSecrets, prepareSecrets, type WebhookSecret } from './secret.js'

/** How far (seconds, inclusive) a timestamp may be from the current time, past or future. */
export const DEFAULT_TOLERANCE_SECONDS = 300
const MAX_ID_LENGTH = 256
const SIGNATURE_HEX_LENGTH = 64
const TIMESTAMP_PATTERN = /^[0-9]{1,15}$/
const SIGNATURE_PATTERN = /^[0-9a-fA-F]{64}$/
// Visible ASCII without '.', ',' and white space: the id is part of the signed text and a
// comma is how proxies join a repeated header.
const ID_PATTERN = /^[!-+\-/-~]+$/

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

/** A verifier bound to prepared secrets and options. */
export type Verifier = (headers: WebhookHeaders, body: WebhookBody) => Promise<VerifiedWebhook>

const HEX_VALUE = (() => {
  const table = new Int8Array(128).fill(-1)
  for (let i = 0; i < 10; i++) table[48 + i] = i
  for (let i = 0; i < 6; i++) {
    table[65 + i] = 10 + i
    table[97 + i] = 10 + i
  }
  return table
})()

function decodeSignature(hex: string): Uint8Array {
  const out = new Uint8Array(SIGNATURE_HEX_LENGTH / 2)
  for (let i = 0; i < out.length; i++) {
    out[i] = ((HEX_VALUE[hex.charCodeAt(2 * i)] as number) << 4) | (HEX_VALUE[hex.charCodeAt(2 * i + 1)] as number)
  }
  return out
}

function toBytes(body: WebhookBody): Uint8Array | string {
  if (typeof body === 'string' || body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
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

async function verifyPrepared(
  headers: WebhookHeaders,
  body: WebhookBody,
  prepared: PreparedSecrets,
  tolerance: number,
  now: () => number,
): Promise<VerifiedWebhook> {
  const { id, timestamp: timestampText, signature } = readWebhookHeaders(headers)

  if (id.length === 0 || id.length > MAX_ID_LENGTH || !ID_PATTERN.test(id)) {
    throw new WebhookVerificationError(
      'malformed_id',
      `The webhook-id header must be 1–${MAX_ID_LENGTH} visible ASCII characters without '.', ',' or spaces (the event UUID).`,
    )
  }
  if (!TIMESTAMP_PATTERN.test(timestampText)) {
    throw new WebhookVerificationError(
      'malformed_timestamp',
      'The webhook-timestamp header must be Unix time in whole seconds, digits only (1–15 digits).',
    )
  }
  if (signature.length !== SIGNATURE_HEX_LENGTH || !SIGNATURE_PATTERN.test(signature)) {
    throw new WebhookVerificationError(
      'malformed_signature',
      'The webhook-signature header must be exactly 64 hexadecimal characters (HMAC-SHA256). Check that no prefix such as "v1," or "sha256=" was added.',
    )
  }

  const timestamp = Number(timestampText)
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
    )
  }
  if (-age > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_too_new',
      `The webhook-timestamp is more than ${tolerance} s in the future. Check this server's clock (NTP).`,
    )
  }

  const bytes = toBytes(body)
  const mac = decodeSignature(signature)
  const prefix = `${id}.${timestampText}.`
  for (const key of prepared.keys) {
    if (await backend.verify(key, prefix, bytes, mac)) return { id, timestamp }
  }
  throw new WebhookVerificationError(
    'signature_mismatch',
    "The signature does not match. Check that the secret is this endpoint's signing secret, and that the body given to the verifier is the raw request body (not parsed and re-serialised, not altered by a proxy).",
  )
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
