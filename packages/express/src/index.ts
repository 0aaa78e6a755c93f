/**
 * @email-webhooks/express: `emailWebhook(secret, handlers, options?)` as an Express 4/5
 * request handler. The adapter only finds the raw body, hands it with the headers to core's
 * receiver, and writes the answer; all webhook logic lives in @email-webhooks/core.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  type CheckedEmailEventHandlers,
  ClientAbortedError,
  createReceiver,
  type EmailEventHandlers,
  type EmailEventType,
  type HandlerContext,
  type Receiver,
  type ReceiverResponse,
  WebhookHandlingError,
  type WebhookOptions,
  type WebhookSecret,
  WebhookVerificationError,
} from '@email-webhooks/core'
// Types only (from @types/express, for Express 4 and 5): the runtime never imports express.
import type { Request, Response } from 'express'
import { guardedResponse } from './guarded-response.js'
import { RAW_BODY_GONE, rawBody } from './raw-body.js'

export { type ExpressConsoleContext, type ExpressConsoleMiddleware, type ExpressConsoleOptions, emailWebhookConsole } from './console.js'
export { captureRawBody } from './raw-body.js'

/** The Express request and response, added to every handler's context. */
export interface ExpressHandlerContext {
  /** The Express request (`ctx.req.ip`, `ctx.req.params`, …). */
  req: Request
  /**
   * The Express response, for `res.locals` and headers. It cannot send: the middleware answers
   * after the event is recorded, so `send`, `json`, `end`, `status(…).send(…)` and the like throw.
   */
  res: Response
}

/** Handler context inside Express: core's context plus `req` and `res`. */
export type ExpressContext = HandlerContext & ExpressHandlerContext

/** Options of the Express `emailWebhook`; see core's `WebhookOptions`. */
export type ExpressWebhookOptions = WebhookOptions<ExpressContext>

/** Handlers keyed by email event type, with the Express context. */
export type ExpressEventHandlers = EmailEventHandlers<ExpressContext>

/**
 * The middleware: `(req, res, next) => Promise<void>` over Node's own request and response, usable
 * with Express 4 and 5 (and as connect-style middleware, such as h3's `fromNodeMiddleware`), with the
 * receiver's counters.
 */
export type EmailWebhookMiddleware = ((req: IncomingMessage, res: ServerResponse, next: (error?: Error) => void) => Promise<void>) &
  Pick<Receiver, 'stats' | 'store' | 'inbox'>

function send(res: ServerResponse, answer: ReceiverResponse, close = false): void {
  res.statusCode = answer.status
  for (const name in answer.headers) res.setHeader(name, answer.headers[name] as string)
  if (close) res.setHeader('connection', 'close')
  res.end(answer.body)
}

/**
 * Receives email webhooks on an Express route.
 *
 * @param secret The endpoint secret, or several during rotation.
 * @param handlers Handlers keyed by email event type; each gets `(event, ctx)` with `ctx.req`, `ctx.res`, `ctx.signal`.
 * @param options See core's `WebhookOptions` (store, onUnknown, onError, leaseMs, …).
 * @returns An Express request handler that writes the answer itself.
 * @throws {TypeError} when the secret or an option is invalid (at startup, not per request).
 * @example
 * app.post('/hooks', emailWebhook(process.env.EMAIL_WEBHOOK_SECRET!, {
 *   'email.bounced': async (event) => { await markBounced(event.data.id) },
 * }))
 */
export function emailWebhook<K extends string = EmailEventType>(
  secret: WebhookSecret,
  handlers: CheckedEmailEventHandlers<K, ExpressContext> = {},
  options: ExpressWebhookOptions = {},
): EmailWebhookMiddleware {
  const receiver = createReceiver<ExpressHandlerContext>({ ...options, secret, handlers })
  async function emailWebhookMiddleware(req: IncomingMessage, res: ServerResponse, next: (error?: Error) => void): Promise<void> {
    try {
      const pending = rawBody(req, receiver.maxBodyBytes)
      if (!pending) {
        send(res, receiver.refuse(new WebhookHandlingError('raw_body_unavailable', RAW_BODY_GONE)))
        return
      }
      let body: Uint8Array | string
      try {
        body = await pending
      } catch (error) {
        if (error instanceof ClientAbortedError) return
        if (error instanceof WebhookVerificationError) {
          send(res, receiver.refuse(error), true)
          return
        }
        throw error
      }
      const context = { req: req as Request, res: guardedResponse(res) }
      const answer = await receiver.receive({ headers: req.headers, body, context })
      // Only something outside the guard (another middleware, a timer, req.res) can have answered by
      // now: the sender got that answer, not this one. Express's error handling reports it.
      if (res.headersSent) {
        next(
          new Error(
            `[@email-webhooks/express] the response was already sent when the receiver's ${answer.status} (${answer.code ?? answer.outcome}) answer was ready: the sender got that earlier answer instead. Nothing but emailWebhook may answer this route; handlers return to acknowledge and throw to get a retry.`,
          ),
        )
        return
      }
      send(res, answer)
    } catch (error) {
      next(error as Error)
    }
  }
  return Object.assign(emailWebhookMiddleware, { stats: receiver.stats, store: receiver.store, inbox: receiver.inbox })
}
