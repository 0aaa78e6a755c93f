/**
 * The web-standard handler: `(request: Request) => Promise<Response>`, for Bun.serve,
 * Deno.serve, Cloudflare Workers and Next.js route handlers.
 */
import { declaredLengthExceeds } from './body.js'
import { WebhookVerificationError } from './errors.js'
import type { EmailEventType } from './events.js'
import {
  bodyTooLargeError,
  type CheckedEmailEventHandlers,
  createReceiver,
  type HandlerContext,
  type Receiver,
  type ReceiverResponse,
  type WebhookOptions,
} from './receiver/index.js'
import type { WebhookSecret } from './secret.js'

/** Extra handler context of the fetch handler: the incoming `Request`. */
export interface FetchHandlerContext {
  request: Request
}

/**
 * Reads a web stream into one buffer, refusing (and cancelling the stream) past `maxBytes`.
 * @throws {WebhookVerificationError} `body_too_large`.
 */
export async function readBodyWithLimit(stream: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Uint8Array> {
  if (!stream) return new Uint8Array(0)
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw bodyTooLargeError(maxBytes)
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

/** Turns a receiver answer into a `Response`. */
export function toResponse(answer: ReceiverResponse): Response {
  return new Response(answer.body, { status: answer.status, headers: answer.headers })
}

const METHOD_NOT_ALLOWED = JSON.stringify({ error: { code: 'method_not_allowed', message: 'Webhook deliveries are POST requests.' } })

/** The fetch handler, with the receiver's counters. */
export type FetchWebhookHandler = ((request: Request) => Promise<Response>) & Pick<Receiver, 'stats' | 'store' | 'inbox'>

/**
 * Answers web-standard requests with the full pipeline.
 *
 * @param secret The endpoint secret, or several during rotation.
 * @param handlers Handlers keyed by email event type (a misspelt key fails to compile, saying which type it likely meant).
 * @param options See {@link WebhookOptions}; `store` defaults to SQLite on Node, memory elsewhere.
 * @returns `(request: Request) => Promise<Response>`, with `stats()`.
 * @throws {TypeError} when the secret or an option is invalid.
 * @throws {DedupStoreError} when no store is given and Node's default SQLite store cannot be opened.
 * @example
 * const handle = emailWebhook(process.env.EMAIL_WEBHOOK_SECRET ?? '', { 'email.bounced': (e) => markBounced(e.data.id) })
 * Bun.serve({ fetch: handle })
 */
export function emailWebhook<K extends string = EmailEventType>(
  secret: WebhookSecret,
  handlers: CheckedEmailEventHandlers<K, HandlerContext & FetchHandlerContext> = {},
  options: WebhookOptions<HandlerContext & FetchHandlerContext> = {},
): FetchWebhookHandler {
  const receiver: Receiver<FetchHandlerContext> = createReceiver<FetchHandlerContext>({ ...options, secret, handlers })
  const { maxBodyBytes } = receiver
  async function emailWebhookFetchHandler(request: Request): Promise<Response> {
    if (request.method !== 'POST') {
      return new Response(METHOD_NOT_ALLOWED, { status: 405, headers: { 'content-type': 'application/json', allow: 'POST' } })
    }
    if (declaredLengthExceeds(request.headers.get('content-length'), maxBodyBytes)) {
      await request.body?.cancel().catch(() => {})
      return toResponse(receiver.refuse(bodyTooLargeError(maxBodyBytes)))
    }
    let body: Uint8Array
    try {
      // Cancels the stream itself when the body passes the limit.
      body = await readBodyWithLimit(request.body, maxBodyBytes)
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error
      return toResponse(receiver.refuse(error))
    }
    return toResponse(await receiver.receive({ headers: request.headers, body, context: { request } }))
  }
  return Object.assign(emailWebhookFetchHandler, { stats: receiver.stats, store: receiver.store, inbox: receiver.inbox })
}
