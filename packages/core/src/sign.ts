/** Signing deliveries the way the email service does; for tests, fixtures and tools. */
import { backend } from '#crypto'
import { HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP } from './headers.js'
import { assertValidSecrets, prepareSecrets } from './secret.js'

/** Input of {@link signWebhook}. */
export interface SignWebhookInput<B extends string | Uint8Array = string | Uint8Array> {
  /** The endpoint secret to sign with. */
  secret: string
  /** The exact body to send. */
  body: B
  /** The `webhook-id`; default a random UUID. */
  id?: string
  /** Unix time in seconds; default now. */
  timestamp?: number
}

/** Headers and body of a signed delivery, ready for `fetch`, supertest or `app.request()`. */
export interface SignedWebhook<B extends string | Uint8Array = string | Uint8Array> {
  headers: Record<string, string>
  body: B
}

/**
 * Signs a body as the email service does: HMAC-SHA256 over `id.timestamp.body`, lowercase hex.
 *
 * @param input.secret The endpoint secret.
 * @param input.body The body to sign (sent unchanged).
 * @param input.id The event id; default `crypto.randomUUID()`.
 * @param input.timestamp Seconds since the epoch; default now.
 * @throws {TypeError} when the secret is invalid or the timestamp is not a whole non-negative number.
 * @example
 * const { headers, body } = await signWebhook({ secret, body: JSON.stringify(event), id: event.id })
 * await fetch(url, { method: 'POST', headers, body })
 */
export async function signWebhook<B extends string | Uint8Array>(input: SignWebhookInput<B>): Promise<SignedWebhook<B>> {
  assertValidSecrets(input.secret)
  if (typeof input.secret !== 'string') throw new TypeError('[@email-webhooks/core] signWebhook signs with one secret (a string).')
  const id = input.id ?? crypto.randomUUID()
  const timestamp = input.timestamp ?? Math.floor(Date.now() / 1000)
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new TypeError('[@email-webhooks/core] timestamp must be whole seconds since the epoch.')
  }
  const [key] = prepareSecrets(input.secret).keys
  const signature = await backend.signHex(key, `${id}.${timestamp}.`, input.body)
  return {
    headers: {
      'content-type': 'application/json',
      [HEADER_ID]: id,
      [HEADER_TIMESTAMP]: String(timestamp),
      [HEADER_SIGNATURE]: signature,
    },
    body: input.body,
  }
}
