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

function single(name: string, value: unknown): string {
  if (value === undefined || value === null) {
    throw new WebhookVerificationError(
      'missing_header',
      `The ${name} header is missing. Webhook deliveries carry webhook-id, webhook-timestamp and webhook-signature; check that a proxy does not strip them.`,
    )
  }
  if (typeof value !== 'string') {
    throw new WebhookVerificationError(
      'duplicate_header',
      `The ${name} header was sent more than once; a delivery carries each webhook header exactly once.`,
    )
  }
  return value
}

/**
 * Returns the raw text of the three webhook headers.
 * @throws {WebhookVerificationError} `missing_header` or `duplicate_header`.
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
    const length = key.length
    if (length !== 10 && length !== 17) continue
    const name = key.toLowerCase()
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
