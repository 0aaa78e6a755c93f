/**
 * One reconciled event on the wire, exactly as the sender would send it: the envelope signed with
 * the endpoint secret (core's `signWebhook`, a fresh timestamp per attempt), POSTed without
 * following redirects, abandoned at the timeout. The answer is classified: handled (`{"ok":true}`;
 * `queued` when an inbox-mode receiver recorded it, `{"ok":true,"queued":true}`),
 * already handled (`"duplicate": true`), refused (a status no retry changes: 401, 409
 * `reconcile_unsupported`, a redirect, 404, 413, …) or failed (no answer, 5xx, 429 or 409
 * `in_flight` after bounded retries with full-jitter backoff, honouring `Retry-After`).
 */
import { RECONCILE_FIELD } from '../receiver/facts.js'
import { signWebhook } from '../sign.js'
import type { PlannedEvent } from './reconcile-plan.js'

/** Longest receiver answer read; the receiver's answers are tiny. */
const MAX_ANSWER_CHARS = 64 * 1024
/** Longest part of a receiver's error message kept in the report. */
const MAX_MESSAGE_CHARS = 300

/** How reconciled events are sent (defaults resolved by `reconcileEmails`). */
export interface SendSettings {
  url: string
  secret: string
  fetch: typeof fetch
  timeoutMs: number
  maxAttempts: number
  backoffBaseMs: number
  backoffMaxMs: number
  maxRetryAfterMs: number
  random: () => number
  now: () => number
  signal: AbortSignal | undefined
}

/** What came of one reconciled event. */
export type SendOutcome =
  | { outcome: 'handled'; status: number; attempts: number; skipped?: 'stale'; queued?: true }
  | { outcome: 'duplicate'; status: number; attempts: number }
  | {
      outcome: 'refused'
      status: number
      code: string
      message: string
      attempts: number
      /** The receiver would refuse every event so (a wrong secret, ordering off, a wrong URL): nothing more is sent. */
      stopsRun: boolean
    }
  | { outcome: 'failed'; status: number; code: string; message: string; attempts: number }

interface Answer {
  status: number
  retryAfter: string | null
  json:
    | {
        ok?: unknown
        duplicate?: unknown
        queued?: unknown
        skipped?: unknown
        ignored?: unknown
        error?: { code?: unknown; message?: unknown }
      }
    | undefined
}

/**
 * The envelope of a planned event: `{ id, type, created_at, data: { ...details, id: emailId }, email_webhooks_reconcile: { index } }`.
 * `id` is set after the details, so a `details.id` can never replace the email id.
 */
export function reconciledEnvelope(emailId: string, event: PlannedEvent): Record<string, unknown> {
  return {
    id: event.eventId,
    type: event.type,
    created_at: event.createdAt,
    data: { ...event.details, id: emailId },
    [RECONCILE_FIELD]: { index: event.index },
  }
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

async function readAnswer(response: Response): Promise<Answer> {
  const text = await response.text()
  let json: Answer['json']
  if (text.length > 0 && text.length <= MAX_ANSWER_CHARS) {
    try {
      const value = JSON.parse(text) as unknown
      if (typeof value === 'object' && value !== null) json = value as Answer['json']
    } catch {
      json = undefined
    }
  }
  return { status: response.status, retryAfter: response.headers.get('retry-after'), json }
}

/** One POST; a network failure or the timeout is `{ status: 0, failure }`; the caller's abort is thrown. */
async function postOnce(s: SendSettings, body: string, eventId: string): Promise<Answer | { status: 0; failure: string }> {
  s.signal?.throwIfAborted()
  const signed = await signWebhook({ secret: s.secret, body, id: eventId, timestamp: Math.floor(s.now() / 1000) })
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), s.timeoutMs)
  const onAbort = (): void => controller.abort()
  s.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const sent = s.fetch(s.url, { method: 'POST', headers: signed.headers, body, redirect: 'manual', signal: controller.signal })
    // The timeout holds even for an injected fetch that ignores its signal.
    const aborted = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })
    })
    aborted.catch(() => {})
    sent.catch(() => {})
    return await Promise.race([sent.then(readAnswer), aborted])
  } catch (error) {
    if (s.signal?.aborted) throw s.signal.reason
    if (controller.signal.aborted) return { status: 0, failure: 'timeout' }
    const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause
    const code = typeof cause?.code === 'string' ? cause.code : undefined
    return { status: 0, failure: code ?? (error instanceof Error ? error.message : String(error)) }
  } finally {
    clearTimeout(timer)
    s.signal?.removeEventListener('abort', onAbort)
  }
}

function codeOf(answer: Answer): string {
  const code = answer.json?.error?.code
  if (typeof code === 'string' && code.length <= 100) return code
  if (answer.status >= 300 && answer.status < 400) return 'redirect'
  return `http_${answer.status}`
}

function receiverSaid(answer: Answer): string {
  const message = answer.json?.error?.message
  return typeof message === 'string' && message !== '' ? ` The receiver said: ${message.slice(0, MAX_MESSAGE_CHARS)}` : ''
}

/** Advice for an answer no retry changes. */
function refusalAdvice(status: number, code: string): string {
  if (code === 'reconcile_unsupported')
    return 'the receiver cannot recognise reconciled events: turn ordering: true on in the receiver (with a store that keeps facts: every built-in store does). Nothing ran. Events it handled before ordering was on are unknown to it and would be handled again: then reconcile only emails created after you turned ordering on (since; --since on the command line).'
  if (code === 'timestamp_too_old' || code === 'timestamp_too_new')
    return `the receiver refused the signature's timestamp (${status} ${code}): this machine's clock is more than 5 minutes off the receiver's.`
  if (status === 401)
    return `the receiver refused the signature (${status} ${code}): give the secret of the endpoint this receiver verifies with.`
  if (status >= 300 && status < 400)
    return `the receiver answered a redirect (${status}), which is not followed (the sender does not follow them either): give the final URL.`
  if (status === 413) return `the event is larger than the receiver's maxBodyBytes (413 ${code}): raise it.`
  if (status === 404 || status === 405) return `the receiver URL does not take deliveries (${status} ${code}): check it.`
  return `the receiver refused the event (${status} ${code}).`
}

/** Statuses worth another attempt: no answer, 409 other than reconcile_unsupported (an event of the email in flight), 429, 5xx. */
function retryable(answer: Answer | { status: 0 }): boolean {
  const { status } = answer
  if (status === 0 || status === 429 || status >= 500) return true
  return status === 409 && codeOf(answer as Answer) !== 'reconcile_unsupported'
}

function retryAfterMs(value: string | null): number | undefined {
  if (value === null || !/^\d+$/.test(value.trim())) return undefined
  return Number(value.trim()) * 1000
}

/**
 * Sends one planned event and classifies the answer, with bounded retries.
 * @param s How to send.
 * @param emailId The email id as the service spells it.
 * @param event The planned event.
 * @returns The outcome; a network failure or a 5xx after the last attempt is `failed`, never thrown.
 * @throws The abort reason when `s.signal` aborts.
 * @example
 * const result = await sendReconciled(settings, email.id, plan.toSend[0])
 */
export async function sendReconciled(s: SendSettings, emailId: string, event: PlannedEvent): Promise<SendOutcome> {
  const body = JSON.stringify(reconciledEnvelope(emailId, event))
  for (let attempt = 1; ; attempt++) {
    const answer = await postOnce(s, body, event.eventId)
    if (answer.status >= 200 && answer.status < 300) {
      const json = (answer as Answer).json
      if (json?.duplicate === true) return { outcome: 'duplicate', status: answer.status, attempts: attempt }
      if (typeof json?.ignored === 'string') {
        const code = json.ignored.slice(0, 100)
        const message = `the receiver acknowledged the event without handling it (${answer.status} ignored: ${code}): it could not read the envelope. Please report this.`
        return { outcome: 'refused', status: answer.status, code, message, attempts: attempt, stopsRun: false }
      }
      return {
        outcome: 'handled',
        status: answer.status,
        attempts: attempt,
        ...(json?.skipped === 'stale' ? { skipped: 'stale' as const } : {}),
        // An inbox-mode receiver recorded it; its handler runs after the answer.
        ...(json?.queued === true ? { queued: true as const } : {}),
      }
    }
    if (!retryable(answer)) {
      const code = codeOf(answer as Answer)
      const message = `${refusalAdvice(answer.status, code)}${receiverSaid(answer as Answer)}`
      return { outcome: 'refused', status: answer.status, code, message, attempts: attempt, stopsRun: answer.status !== 413 }
    }
    if (attempt >= s.maxAttempts) {
      if ('failure' in answer) {
        const message = `no answer from the receiver after ${attempt} attempt${attempt > 1 ? 's' : ''} (${answer.failure}): check that it is running and reachable, then run reconcile again.`
        return {
          outcome: 'failed',
          status: 0,
          code: answer.failure === 'timeout' ? 'timeout' : 'network_error',
          message,
          attempts: attempt,
        }
      }
      const code = codeOf(answer)
      const message = `the receiver answered ${answer.status} ${code} to ${attempt} attempt${attempt > 1 ? 's' : ''}: fix it, then run reconcile again (events already handled are answered as duplicates).${receiverSaid(answer)}`
      return { outcome: 'failed', status: answer.status, code, message, attempts: attempt }
    }
    const fromHeader = 'retryAfter' in answer ? retryAfterMs(answer.retryAfter) : undefined
    const cap = Math.min(s.backoffMaxMs, s.backoffBaseMs * 2 ** (attempt - 1))
    const delay = fromHeader !== undefined ? Math.min(fromHeader, s.maxRetryAfterMs) : Math.floor(s.random() * cap)
    await wait(delay, s.signal)
  }
}
