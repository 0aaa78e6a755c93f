/**
 * The typed errors of the management API entry. `EmailApiError`: a failed request, with the HTTP
 * status, the service's stable `code`, its `requestId` and validation `fields`, and a message that
 * says what to do; it never holds the API key (not in its message, its fields nor its `cause`).
 * (The aborted runs of `recoverEndpoint` and `reconcileEmails` have their own errors: aborted.ts.)
 */

/** The prefix of every message of this entry. */
export const PREFIX = '[@email-webhooks/core/api]'

/** Codes the service documents, plus the client's own (`timeout`, `network_error`, `invalid_response`). */
export type EmailApiErrorCode =
  /** 400: fix the request; `fields` says which field. */
  | 'validation_error'
  /** 400: fix the request. */
  | 'invalid_json'
  /** 400: the endpoint URL is refused: endpoint URLs must be public HTTPS on port 443, without credentials, a fragment or a private address. */
  | 'invalid_webhook'
  /** 400: the endpoint URL is refused, as for `invalid_webhook`: use a public HTTPS URL on port 443. */
  | 'unsafe_webhook'
  /** 401: the key is invalid or revoked: use a current server-side key. */
  | 'invalid_api_key'
  /** 402: fix billing in the service's dashboard. */
  | 'billing_attention'
  /** 403: create a key with the scope the message names: `webhooks:manage`, or `emails:read`. */
  | 'missing_scope'
  /** 403: the key's owner is no longer an active member: create a key as an active member. */
  | 'key_owner_unavailable'
  /** 403: the organization is suspended: contact the service. */
  | 'organization_suspended'
  /**
   * 404: no such endpoint (or delivery) in the key's organization: list the endpoints. (`getEmail`
   * resolves a 404 as `{ found: false }` instead.)
   */
  | 'not_found'
  /** 404: the payload is gone; the delivery cannot be retried (`reconcileEmails` can still bring the event). */
  | 'delivery_expired'
  /** 415: the service wants `application/json` bodies: a bug in the client, report it. */
  | 'json_required'
  /** 429 (the service sends no code; the client names it): retried with backoff; if it persists, lower `concurrency`. */
  | 'rate_limited'
  /** 5xx: temporary; retried with backoff. Try again later. */
  | 'internal_error'
  /** 5xx: temporary; retried with backoff. Try again later. */
  | 'api_disabled'
  /** 5xx: temporary; retried with backoff. Try again later. */
  | 'recovery_maintenance'
  /** No answer within `timeoutMs` (status 0): check `baseUrl` and the network, or raise `timeoutMs`. */
  | 'timeout'
  /** No answer (status 0): check `baseUrl` and the network. */
  | 'network_error'
  /** A 2xx answer that was not the API's (status 2xx): check `baseUrl`. */
  | 'invalid_response'
  | (string & {})

/** One validation problem reported by the service: which field, and what is wrong with it. */
export interface EmailApiFieldError {
  path: string
  message: string
}

/** Constructor input of {@link EmailApiError}. */
export interface EmailApiErrorInit {
  /** HTTP status; 0 when no answer arrived (timeout, network failure). */
  status: number
  code: EmailApiErrorCode
  message: string
  requestId?: string | undefined
  fields?: EmailApiFieldError[] | undefined
  /** Requests made, including retries. */
  attempts: number
  /** Already scrubbed of the API key by the client. */
  cause?: unknown
}

/**
 * A request to the sender's management API failed. Handle it by `status` and `code`
 * (never by parsing `message`); quote `requestId` to the service's support.
 *
 * @example
 * try { await client.retryDelivery(endpointId, deliveryId) }
 * catch (error) { if (error instanceof EmailApiError && error.code === 'delivery_expired') skip() }
 */
export class EmailApiError extends Error {
  override readonly name = 'EmailApiError'
  /** HTTP status, or 0 when no answer arrived. */
  readonly status: number
  readonly code: EmailApiErrorCode
  /** The service's `X-Request-Id` of the failed request, when it answered. */
  readonly requestId: string | undefined
  /** Validation problems (`400 validation_error`), when given. */
  readonly fields: readonly EmailApiFieldError[] | undefined
  /** Requests made, including retries. */
  readonly attempts: number

  constructor(init: EmailApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.status = init.status
    this.code = init.code
    this.requestId = init.requestId
    this.fields = init.fields ? Object.freeze(init.fields.map((f) => Object.freeze({ ...f }))) : undefined
    this.attempts = init.attempts
  }

  /** A plain object for logs and `--json` output (nothing secret in it). */
  toJSON(): { name: string; status: number; code: string; message: string; requestId?: string; fields?: EmailApiFieldError[] } {
    return {
      name: this.name,
      status: this.status,
      code: this.code,
      message: this.message,
      ...(this.requestId ? { requestId: this.requestId } : {}),
      ...(this.fields ? { fields: this.fields.map((f) => ({ ...f })) } : {}),
    }
  }
}

/** What the request was about, so the message can name it. */
export interface ApiErrorContext {
  /** e.g. `list endpoints`, `retry delivery d-1 of endpoint e-1`. */
  operation: string
  endpointId?: string
  deliveryId?: string
  emailId?: string
  /** The scope the operation needs; default `webhooks:manage`. */
  scope?: string
  /** The call is not idempotent (POST /webhooks): a 5xx or a lost answer may come after the service acted. */
  mayHaveActed?: boolean
}

/** What to do when a create may have succeeded although its answer was a failure or never came. */
export const MAY_HAVE_ACTED =
  'The service may have created the endpoint anyway, so the client did not retry (a second endpoint would get a secret nobody saw): list the endpoints before creating again, and disable an endpoint whose secret you never received.'

/** The advice for a status and code; the service's own message is appended but never parsed. */
export function adviceFor(status: number, code: string, context: ApiErrorContext, attempts: number): string {
  const tries = attempts > 1 ? ` after ${attempts} attempts` : ''
  switch (code) {
    case 'invalid_api_key':
      return 'the API key was refused (401 invalid_api_key): it is invalid or revoked. Use a current server-side key of the organization (the key is not printed here).'
    case 'missing_scope': {
      const scope = context.scope ?? 'webhooks:manage'
      return `the API key lacks the scope ${scope} (403 missing_scope), which ${context.operation} needs. Create a server-side key with the scope ${scope} and use it.`
    }
    case 'key_owner_unavailable':
      return "the API key's owner is no longer available (403 key_owner_unavailable). Create a new key as an active member of the organization."
    case 'organization_suspended':
      return 'the organization is suspended (403 organization_suspended). Contact the service; no API operation works until then.'
    case 'billing_attention':
      return "the organization's billing needs attention (402 billing_attention). Fix it in the dashboard, then try again."
    case 'delivery_expired':
      return `delivery ${context.deliveryId ?? '?'} can no longer be retried: its payload expired (404 delivery_expired).`
    case 'json_required':
      return 'the service wants application/json bodies (415 json_required); this is a bug in the client, please report it.'
  }
  if (status === 404) {
    if (context.endpointId) {
      return `no webhook endpoint with id ${context.endpointId} in the API key's organization${context.deliveryId ? ` (or no delivery ${context.deliveryId})` : ''} (404 ${code}). List the endpoints to find the right id.`
    }
    return `not found (404 ${code}). Check the base URL: it must end in /v1.`
  }
  if (status === 429) return `rate limited (429)${tries}. Wait a minute and try again, or lower the concurrency.`
  if (status >= 500)
    return `the service is temporarily unavailable (${status} ${code})${tries}. ${context.mayHaveActed ? MAY_HAVE_ACTED : 'Try again later.'}`
  if (status === 400) return `the service refused the request to ${context.operation} (400 ${code}).`
  return `the request to ${context.operation} failed (${status} ${code}).`
}

/** Builds the final message: package prefix, advice, the service's words, the request id. */
export function formatApiMessage(
  advice: string,
  serviceMessage: string | undefined,
  fields: EmailApiFieldError[] | undefined,
  requestId: string | undefined,
): string {
  const details = fields?.length ? ` Fields: ${fields.map((f) => `${f.path}: ${f.message}`).join('; ')}.` : ''
  const said = serviceMessage ? ` The service said: ${serviceMessage}` : ''
  const id = requestId ? ` (request id ${requestId})` : ''
  return `${PREFIX} ${advice}${details}${said}${id}`
}

/** Replaces every occurrence of the key in `text`. */
export function scrub(text: string, key: string): string {
  return key && text.includes(key) ? text.split(key).join('[redacted API key]') : text
}

/** A copy of a low-level failure (fetch TypeError, abort) with the key scrubbed from every message. */
export function scrubbedCause(error: unknown, key: string, depth = 0): Error {
  if (!(error instanceof Error)) return new Error(scrub(String(error), key))
  const copy = new Error(
    scrub(error.message, key),
    error.cause !== undefined && depth < 3 ? { cause: scrubbedCause(error.cause, key, depth + 1) } : undefined,
  )
  copy.name = error.name
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') Object.assign(copy, { code })
  copy.stack = `${copy.name}: ${copy.message}`
  return copy
}
