/**
 * One POST of a signed delivery and what came back: status, Retry-After, latency, the
 * receiver's error code and message (`{ error: { code, message } }`), and whether it said
 * duplicate, queued or skipped. Redirects are not followed: the sender counts them as failures.
 * The body sent is never printed; of the answer, only those fields.
 */

import { SENDER_RECEIVER_TIMEOUT_MS } from '@email-webhooks/core/testing'
import { UsageError } from './errors.js'

/** Default per-request timeout: the sender's own (10 s). */
export const DEFAULT_TIMEOUT_MS: number = SENDER_RECEIVER_TIMEOUT_MS
const MAX_ANSWER_CHARS = 64 * 1024
/** The longest part of a receiver's error message kept (one line). */
const MAX_MESSAGE_CHARS = 500

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
  /** The receiver's error message from `{ error: { message } }`, on one line (cut at 500 characters), when it gave one. */
  message?: string
  /** True when the receiver said `{ "duplicate": true }`. */
  duplicate?: boolean
  /** True when the receiver said `{ "queued": true }`: recorded in its inbox (inbox mode), its handler runs after the answer. */
  queued?: boolean
  /**
   * Why a 2xx was acknowledged without running a handler, from `{ "skipped": … }`: `stale` when the
   * receiver's ordering (`skipStale`) found a newer event of the same email already handled.
   */
  skipped?: string
  /** Why there was no answer: `timeout`, `aborted` or a network error code such as ECONNREFUSED. */
  failure?: string
}

/** A message on one line without control characters, cut to MAX_MESSAGE_CHARS. */
function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()
  return flat.length > MAX_MESSAGE_CHARS ? `${flat.slice(0, MAX_MESSAGE_CHARS)}…` : flat
}

type AnswerFacts = Pick<Answer, 'code' | 'message' | 'duplicate' | 'queued' | 'skipped'>

function readCode(text: string): AnswerFacts {
  if (text.length === 0 || text.length > MAX_ANSWER_CHARS) return {}
  try {
    const value = JSON.parse(text) as {
      error?: { code?: unknown; message?: unknown }
      ignored?: unknown
      duplicate?: unknown
      queued?: unknown
      skipped?: unknown
    }
    // A signed body that is not an envelope is acknowledged with `"ignored": "invalid_envelope"`.
    const code = typeof value?.error?.code === 'string' ? value.error.code : typeof value?.ignored === 'string' ? value.ignored : undefined
    const message = typeof value?.error?.message === 'string' ? oneLine(value.error.message) : undefined
    // An older event of an email skipped by the receiver's ordering is acknowledged with `"skipped": "stale"`.
    const skipped = typeof value?.skipped === 'string' ? value.skipped : undefined
    return {
      ...(code === undefined ? {} : { code }),
      ...(message ? { message } : {}),
      ...(value?.duplicate === true ? { duplicate: true } : {}),
      ...(value?.queued === true ? { queued: true } : {}),
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
