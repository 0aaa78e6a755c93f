/**
 * Secret validation and key preparation. A secret is checked once, when a receiver is
 * created (or on first use by `verifyWebhook`), never per request.
 */
import { backend } from '#crypto'

const PACKAGE = '[@email-webhooks/core]'
const encoder = new TextEncoder()

/** One or several endpoint secrets; any of them verifies (rotation). */
export type WebhookSecret = string | readonly string[]

/** Secrets ready for HMAC: validated, UTF-8 encoded and imported once. */
export interface PreparedSecrets {
  readonly keys: readonly unknown[]
}

/** Prepared single secrets by their text (validated before they enter), for receivers and repeated `verifyWebhook` calls. */
const cache = new Map<string, PreparedSecrets>()
const CACHE_LIMIT = 32

function describeSecretProblem(secret: unknown, label: string): string | undefined {
  if (typeof secret !== 'string') {
    return `${label} must be a string (the endpoint secret shown when the webhook endpoint was created), got ${secret === null ? 'null' : typeof secret}. Check that the environment variable holding it is set.`
  }
  if (secret.length === 0) {
    return `${label} is empty. Set it to the endpoint secret shown when the webhook endpoint was created; check that the environment variable holding it is set and loaded.`
  }
  if (secret.trim() !== secret) {
    return `${label} has leading or trailing white space (often a newline from a .env file or a copy-paste). Remove it: the secret must be used exactly as shown when the endpoint was created.`
  }
  return undefined
}

/**
 * Checks one or several secrets and throws an `Error` that says what is wrong.
 * @throws {TypeError} when a secret is missing, empty or has surrounding white space.
 */
export function assertValidSecrets(secret: unknown): asserts secret is WebhookSecret {
  if (Array.isArray(secret)) {
    if (secret.length === 0) {
      throw new TypeError(`${PACKAGE} secret is an empty list. Give at least one endpoint secret.`)
    }
    // An index loop, not forEach: a hole in a sparse array must be refused, not skipped.
    for (let index = 0; index < secret.length; index++) {
      const problem = describeSecretProblem(secret[index], `secret[${index}]`)
      if (problem) throw new TypeError(`${PACKAGE} ${problem}`)
    }
    return
  }
  const problem = describeSecretProblem(secret, 'secret')
  if (problem) throw new TypeError(`${PACKAGE} ${problem}`)
}

function preparedFor(secret: string): PreparedSecrets {
  let prepared = cache.get(secret)
  if (prepared === undefined) {
    prepared = { keys: [backend.importKey(encoder.encode(secret))] }
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string)
    cache.set(secret, prepared)
  }
  return prepared
}

/**
 * Validates and imports secrets; the result is reused for every request.
 * @throws {TypeError} when a secret is invalid (see {@link assertValidSecrets}).
 */
export function prepareSecrets(secret: WebhookSecret): PreparedSecrets {
  if (typeof secret === 'string') {
    // Already validated when it was cached: `verifyWebhook` with the same secret costs one lookup.
    const cached = cache.get(secret)
    if (cached !== undefined) return cached
  }
  assertValidSecrets(secret)
  if (typeof secret === 'string') return preparedFor(secret)
  return { keys: secret.map((one) => preparedFor(one).keys[0]) }
}
