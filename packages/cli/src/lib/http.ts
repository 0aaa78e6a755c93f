/**
 * One POST of a signed delivery and what came back: status, Retry-After, latency and the
 * receiver's error code (`{ error: { code } }`). Redirects are not followed: the sender
 * counts them as failures. The body sent and received is never printed.
 */

import { SENDER_RECEIVER_TIMEOUT_MS } from '@email-webhooks/core/testing'
import { UsageError } from './errors.js'

/** Default per-request timeout: the sender's own (10 s). */
export const DEFAULT_TIMEOUT_MS: number = SENDER_RECEIVER_TIMEOUT_MS
const MAX_ANSWER_CHARS = 64 * 1024

/** A request to send. */
export interface Delivery {
  headers: Record<string, string>
  body: string | Uint8Array
}

/** The outcome of one request. */
export interface Answer {
  /** HTTP status, or undefined when there was no answer (see `failure`). */
  status?: number
  /** The Retry-After header, when present. */
  retryAfter?: string
  /** Milliseconds from sending to the end of the answer's body. */
  latencyMs: number
  /** The receiver's error code from `{ error: { code } }`, when it gave one. */
  code?: string
  /** True when the receiver said `{ "duplicate": true }`. */
  duplicate?: boolean
  /**
   * Why a 2xx was acknowledged without running a handler, from `{ "skipped": … }`: `stale` when the
   * receiver's ordering (`skipStale`) found a newer event of the same email already handled.
   */
  skipped?: string
  /** Why there was no answer: `timeout`, `aborted` or a network error code such as ECONNREFUSED. */
  failure?: string
}

function readCode(text: string): { code?: string; duplicate?: boolean; skipped?: string } {
  if (text.length === 0 || text.length > MAX_ANSWER_CHARS) return {}
  try {
    const value = JSON.parse(text) as { error?: { code?: unknown }; ignored?: unknown; duplicate?: unknown; skipped?: unknown }
    // A signed body that is not an envelope is acknowledged with `"ignored": "invalid_envelope"`.
    const code = typeof value?.error?.code === 'string' ? value.error.code : typeof value?.ignored === 'string' ? value.ignored : undefined
    // An older event of an email skipped by the receiver's ordering is acknowledged with `"skipped": "stale"`.
    const skipped = typeof value?.skipped === 'string' ? value.skipped : undefined
    return {
      ...(code === undefined ? {} : { code }),
      ...(value?.duplicate === true ? { duplicate: true } : {}),
      ...(skipped === undefined ? {} : { skipped }),
    }
  } catch {
    return {}
  }
}

function failureOf(error: unknown, signal: AbortSignal | undefined): string {
  const err = error as { name?: string; message?: string; cause?: { code?: string; name?: string; message?: string } }
  if (err?.name === 'TimeoutError' || err?.cause?.name === 'TimeoutError') return 'timeout'
  if (err?.name === 'AbortError') return signal?.aborted ? 'aborted' : 'timeout'
  // undici: `TypeError: fetch failed` with the reason (ECONNREFUSED, ENOTFOUND, "bad port") as its cause.
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? 'network_error'
}

/**
 * POSTs one delivery and measures the answer.
 * @param url The receiver's URL.
 * @param delivery Signed headers and the body.
 * @param options.timeoutMs Give up after this many ms (default 10 000, the sender's timeout).
 * @param options.signal Aborts the request (Ctrl-C).
 * @returns The answer; network failures are returned, not thrown.
 * @example
 * const answer = await post('http://127.0.0.1:3000/hooks', signed)
 */
export async function post(url: string, delivery: Delivery, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Answer> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout
  const started = performance.now()
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body as BodyInit,
      redirect: 'manual',
      signal,
    })
    const text = await response.text()
    const latencyMs = performance.now() - started
    const retryAfter = response.headers.get('retry-after')
    return { status: response.status, latencyMs, ...(retryAfter === null ? {} : { retryAfter }), ...readCode(text) }
  } catch (error) {
    return { latencyMs: performance.now() - started, failure: failureOf(error, options.signal) }
  }
}

/**
 * The URL as safe to print: without user name or password.
 * @example
 * displayUrl('https://user:pw@example.com/hooks') // 'https://example.com/hooks'
 */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url)
    parsed.username = ''
    parsed.password = ''
    return parsed.toString()
  } catch {
    return '(invalid URL)'
  }
}

/**
 * Checks a receiver URL: absolute, http or https.
 * @throws {UsageError} otherwise.
 * @example
 * checkUrl('http://127.0.0.1:3000/hooks')
 */
export function checkUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new UsageError('The URL must be absolute, e.g. http://127.0.0.1:3000/hooks.')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError('The URL must start with http:// or https://.')
  return url
}
