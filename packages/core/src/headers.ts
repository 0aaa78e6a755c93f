/** Reading the three webhook headers from a Fetch `Headers` or a plain / Node header record. */
import { WebhookVerificationError } from './errors.js'

/** A Fetch `Headers`, or a record such as Node's `IncomingHttpHeaders`; names are case-insensitive. */
export type WebhookHeaders =
  | Headers
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>

export const HEADER_ID = 'webhook-id'
export const HEADER_TIMESTAMP = 'webhook-timestamp'
export const HEADER_SIGNATURE = 'webhook-signature'

export interface WebhookHeaderValues {
  id: string
  timestamp: string
  signature: string
}

function isHeadersLike(headers: unknown): headers is { get(name: string): string | null } {
  return typeof (headers as { get?: unknown }).get === 'function'
}

const MALFORMED_CODE = {
  [HEADER_ID]: 'malformed_id',
  [HEADER_TIMESTAMP]: 'malformed_timestamp',
  [HEADER_SIGNATURE]: 'malformed_signature',
} as const

function missing(name: string): WebhookVerificationError {
  return new WebhookVerificationError(
    'missing_header',
    `The ${name} header is missing. Webhook deliveries carry webhook-id, webhook-timestamp and webhook-signature; check that a proxy does not strip them.`,
  )
}

function single(name: typeof HEADER_ID | typeof HEADER_TIMESTAMP | typeof HEADER_SIGNATURE, value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined || value === null) throw missing(name)
  if (Array.isArray(value)) {
    // Node's `req.headersDistinct` gives every header as a list: one entry is one header.
    if (value.length === 1 && typeof value[0] === 'string') return value[0]
    if (value.length === 0) throw missing(name)
    throw new WebhookVerificationError(
      'duplicate_header',
      `The ${name} header was sent more than once; a delivery carries each webhook header exactly once.`,
    )
  }
  throw new WebhookVerificationError(
    MALFORMED_CODE[name],
    `The ${name} header value is not text (got ${typeof value}); pass the request headers as received.`,
  )
}

/**
 * Returns the raw text of the three webhook headers.
 * @throws {WebhookVerificationError} `missing_header`, `duplicate_header`, or the header's `malformed_*` code for a value that is not text.
 */
export function readWebhookHeaders(headers: WebhookHeaders): WebhookHeaderValues {
  if (headers === null || typeof headers !== 'object') {
    throw new WebhookVerificationError(
      'missing_header',
      'No headers were given. Pass the request headers (a Fetch Headers or a record such as req.headers).',
    )
  }
  if (isHeadersLike(headers)) {
    return {
      id: single(HEADER_ID, headers.get(HEADER_ID)),
      timestamp: single(HEADER_TIMESTAMP, headers.get(HEADER_TIMESTAMP)),
      signature: single(HEADER_SIGNATURE, headers.get(HEADER_SIGNATURE)),
    }
  }
  const record = headers as Readonly<Record<string, unknown>>
  let id: unknown
  let timestamp: unknown
  let signature: unknown
  let seen = 0
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue
    let name = key
    // Node's `req.headers` names are lower-case already: lower-case only other names of the right length.
    if (key !== HEADER_ID && key !== HEADER_TIMESTAMP && key !== HEADER_SIGNATURE) {
      if (key.length !== 10 && key.length !== 17) continue
      name = key.toLowerCase()
    }
    let slot: 0 | 1 | 2
    if (name === HEADER_ID) slot = 0
    else if (name === HEADER_TIMESTAMP) slot = 1
    else if (name === HEADER_SIGNATURE) slot = 2
    else continue
    const bit = 1 << slot
    if (seen & bit) {
      throw new WebhookVerificationError(
        'duplicate_header',
        `The ${name} header was given twice (under names that differ only in case); a delivery carries each webhook header exactly once.`,
      )
    }
    seen |= bit
    const value = record[key]
    if (slot === 0) id = value
    else if (slot === 1) timestamp = value
    else signature = value
  }
  return {
    id: single(HEADER_ID, id),
    timestamp: single(HEADER_TIMESTAMP, timestamp),
    signature: single(HEADER_SIGNATURE, signature),
  }
}
