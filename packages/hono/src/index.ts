/**
 * @email-webhooks/hono: `emailWebhook(secret, handlers, options?)` as a Hono handler, on any
 * runtime Hono runs on. A body whose content-length passes `maxBodyBytes` is refused before it
 * is read; a chunked body is streamed with core's bounded reader and refused as soon as it passes
 * the limit. The bytes stay in Hono's body cache (so `c.req.json()` still works afterwards) and go
 * to core's receiver, whose answer is returned.
 */
import {
  bodyTooLargeError,
  createReceiver,
  declaredLength,
  type EmailEventHandlers,
  type HandlerContext,
  readBodyWithLimit,
  toResponse,
  type WebhookOptions,
  type WebhookSecret,
  WebhookVerificationError,
} from '@email-webhooks/core'
import type { Context, Env, Handler } from 'hono'

/** Hono's context, added to every handler's context as `c`. */
export interface HonoHandlerContext<E extends Env = Env> {
  c: Context<E>
}

/** Handler context inside Hono: core's context plus `c`. */
export type HonoContext<E extends Env = Env> = HandlerContext & HonoHandlerContext<E>

/** Options of the Hono `emailWebhook`; see core's `WebhookOptions`. */
export type HonoWebhookOptions<E extends Env = Env> = WebhookOptions<HonoContext<E>>

/** Handlers keyed by email event type, with the Hono context. */
export type HonoEventHandlers<E extends Env = Env> = EmailEventHandlers<HonoContext<E>>

/**
 * The raw body, read at most `maxBytes` into it, and cached for `c.req.json()` / `c.req.text()`.
 * With a `content-length` (already checked against the limit) the HTTP layer frames the body to
 * that length, so `c.req.arrayBuffer()` reads it: on @hono/node-server that skips building a
 * full `Request` with a web stream, a large part of a small request's cost. Without one (a
 * chunked body) the stream is read under the limit and refused as soon as it passes it. An
 * earlier middleware's `c.req.arrayBuffer()` is reused as is; the receiver checks every size.
 */
async function readBody<E extends Env>(c: Context<E>, maxBytes: number, framed: boolean): Promise<ArrayBuffer> {
  const cache = c.req.bodyCache
  if (framed || cache.arrayBuffer || c.req.raw.bodyUsed) return c.req.arrayBuffer()
  const bytes = await readBodyWithLimit(c.req.raw.body, maxBytes)
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  const buffer = (whole ? bytes.buffer : bytes.slice().buffer) as ArrayBuffer
  // Hono keeps promises in its body cache (its type says ArrayBuffer); json() and text() derive from this one.
  ;(cache as { arrayBuffer?: Promise<ArrayBuffer> }).arrayBuffer = Promise.resolve(buffer)
  return buffer
}

/**
 * Receives email webhooks on a Hono route.
 *
 * @param secret The endpoint secret, or several during rotation.
 * @param handlers Handlers keyed by email event type; each gets `(event, ctx)` with `ctx.c`, `ctx.signal`.
 * @param options See core's `WebhookOptions` (store, onUnknown, onError, leaseMs, …).
 * @returns A Hono handler, generic over the app's `Env`.
 * @throws {TypeError} when the secret or an option is invalid (at startup, not per request).
 * @example
 * app.post('/hooks', emailWebhook(c.env.EMAIL_WEBHOOK_SECRET, { 'email.bounced': (event) => markBounced(event.data.id) }))
 */
export function emailWebhook<E extends Env = Env>(
  secret: WebhookSecret,
  handlers: HonoEventHandlers<E> = {},
  options: HonoWebhookOptions<E> = {},
): Handler<E> {
  const receiver = createReceiver<HonoHandlerContext<E>>({ ...options, secret, handlers })
  return async function emailWebhookHandler(c: Context<E>): Promise<Response> {
    const declared = declaredLength(c.req.header('content-length'))
    if (declared !== undefined && declared > receiver.maxBodyBytes) {
      return toResponse(receiver.refuse(bodyTooLargeError(receiver.maxBodyBytes)))
    }
    let body: ArrayBuffer
    try {
      body = await readBody(c, receiver.maxBodyBytes, declared !== undefined)
    } catch (error) {
      if (error instanceof WebhookVerificationError) return toResponse(receiver.refuse(error))
      // The client hung up mid-body: nothing was claimed and nobody reads the answer; do not
      // let Hono's error handler log a stack for it.
      if (c.req.raw.signal.aborted || (error as { code?: unknown }).code === 'ECONNRESET') return new Response(null, { status: 400 })
      throw error
    }
    return toResponse(await receiver.receive({ headers: c.req.raw.headers, body, context: { c } }))
  }
}
