/**
 * @email-webhooks/hono: `emailWebhook(secret, handlers, options?)` as a Hono handler, on any
 * runtime Hono runs on. It reads the body with `c.req.arrayBuffer()` (so `c.req.json()` still
 * works afterwards), hands it to core's receiver and returns its answer.
 */
import {
  bodyTooLargeError,
  createReceiver,
  declaredLengthExceeds,
  type EmailEventHandlers,
  type HandlerContext,
  toResponse,
  type WebhookOptions,
  type WebhookSecret,
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
    if (declaredLengthExceeds(c.req.header('content-length'), receiver.maxBodyBytes)) {
      return toResponse(receiver.refuse(bodyTooLargeError(receiver.maxBodyBytes)))
    }
    const body = await c.req.arrayBuffer()
    return toResponse(await receiver.receive({ headers: c.req.raw.headers, body, context: { c } }))
  }
}
