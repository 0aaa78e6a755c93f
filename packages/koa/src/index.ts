/**
 * @email-webhooks/koa: `emailWebhook(secret, handlers, options?)` as Koa 2/3 middleware, for a route
 * (`router.post('/hooks', emailWebhook(…))`). The adapter finds the raw bytes (a Buffer body, the
 * `rawBody` a body parser kept, or the unread request stream, read under `maxBodyBytes`), hands them
 * with the headers to core's receiver, and sets the answer on `ctx`.
 */
import {
  bodyTooLargeError,
  type CheckedEmailEventHandlers,
  ClientAbortedError,
  createReceiver,
  declaredLengthExceeds,
  type EmailEventHandlers,
  type EmailEventType,
  type HandlerContext,
  type Receiver,
  type ReceiverResponse,
  readNodeBody,
  WebhookHandlingError,
  type WebhookOptions,
  type WebhookSecret,
  WebhookVerificationError,
} from '@email-webhooks/core'
import type { DefaultContext, DefaultState, Middleware, ParameterizedContext } from 'koa'

export { emailWebhookConsole, type KoaConsoleContext, type KoaConsoleMiddleware, type KoaConsoleOptions } from './console.js'

/** Koa's context, added to every handler's context as `koa`. */
export interface KoaHandlerContext<StateT = DefaultState, ContextT = DefaultContext> {
  /** The Koa context (`ctx.koa.state`, `ctx.koa.params` with @koa/router, …). The middleware sets the answer after the handler. */
  koa: ParameterizedContext<StateT, ContextT>
}

/** Handler context inside Koa: core's context plus `koa`. */
export type KoaContext<StateT = DefaultState, ContextT = DefaultContext> = HandlerContext & KoaHandlerContext<StateT, ContextT>

/** Options of the Koa `emailWebhook`; see core's `WebhookOptions`. */
export type KoaWebhookOptions<StateT = DefaultState, ContextT = DefaultContext> = WebhookOptions<KoaContext<StateT, ContextT>>

/** Handlers keyed by email event type, with the Koa context. */
export type KoaEventHandlers<StateT = DefaultState, ContextT = DefaultContext> = EmailEventHandlers<KoaContext<StateT, ContextT>>

/** The middleware, with the receiver's counters. */
export type EmailWebhookMiddleware<StateT = DefaultState, ContextT = DefaultContext> = Middleware<StateT, ContextT> &
  Pick<Receiver, 'stats' | 'store' | 'inbox'>

/** The message of a 500 `raw_body_unavailable`: the fixes. */
const RAW_BODY_GONE =
  '[@email-webhooks/koa] a body parser already read the request body and kept no raw bytes, so the signature cannot be checked. Fix: mount the webhook route before the body parser (koa-bodyparser, @koa/bodyparser, koa-body) or skip it on that route; or keep the raw body: koa-bodyparser and @koa/bodyparser keep ctx.request.rawBody, koa-body does with includeUnparsed: true.'

/** koa-body's key for the unparsed text, with `includeUnparsed: true`. */
const UNPARSED = Symbol.for('unparsedBody')

type ParsedRequest = { body?: unknown; rawBody?: unknown }

/** The raw bytes: a Buffer body, a kept raw body, or the unread stream; undefined when a parser consumed them. */
function rawBody(ctx: ParameterizedContext, maxBytes: number): Promise<Uint8Array | string> | undefined {
  const { body, rawBody: kept } = ctx.request as ParsedRequest
  if (body instanceof Uint8Array) return Promise.resolve(body)
  if (kept instanceof Uint8Array || typeof kept === 'string') return Promise.resolve(kept)
  const unparsed = body !== null && typeof body === 'object' ? (body as Record<symbol, unknown>)[UNPARSED] : undefined
  if (typeof unparsed === 'string') return Promise.resolve(unparsed)
  // A parser that skipped this content type (@koa/bodyparser sets body to {}) left the stream unread.
  if (ctx.req.readableEnded || ctx.req.readableDidRead) return undefined
  if (declaredLengthExceeds(ctx.get('content-length'), maxBytes)) return Promise.reject(bodyTooLargeError(maxBytes))
  return readNodeBody(ctx.req, maxBytes)
}

function send(ctx: ParameterizedContext, answer: ReceiverResponse, close = false): void {
  ctx.status = answer.status
  ctx.set(answer.headers)
  if (close) ctx.set('connection', 'close')
  // After the content-type header: Koa keeps it rather than guessing text/plain.
  ctx.body = answer.body
}

/**
 * Receives email webhooks on a Koa route.
 *
 * @param secret The endpoint secret, or several during rotation.
 * @param handlers Handlers keyed by email event type; each gets `(event, ctx)` with `ctx.koa`, `ctx.signal`.
 * @param options See core's `WebhookOptions` (store, onUnknown, onError, logger, leaseMs, …).
 * @returns Koa middleware, generic over the app's state and context, with `stats()`.
 * @throws {TypeError} when the secret or an option is invalid (at startup, not per request).
 * @throws {DedupStoreError} when no store is given and Node's default SQLite store cannot be opened.
 * @example
 * router.post('/hooks', emailWebhook(process.env.EMAIL_WEBHOOK_SECRET ?? '', { 'email.bounced': (event) => markBounced(event.data.id) }))
 */
export function emailWebhook<StateT = DefaultState, ContextT = DefaultContext, K extends string = EmailEventType>(
  secret: WebhookSecret,
  handlers: CheckedEmailEventHandlers<K, KoaContext<StateT, ContextT>> = {},
  options: KoaWebhookOptions<StateT, ContextT> = {},
): EmailWebhookMiddleware<StateT, ContextT> {
  const receiver = createReceiver<KoaHandlerContext<StateT, ContextT>>({ ...options, secret, handlers })
  async function emailWebhookMiddleware(koa: ParameterizedContext<StateT, ContextT>): Promise<void> {
    const pending = rawBody(koa as ParameterizedContext, receiver.maxBodyBytes)
    if (!pending) return send(koa, receiver.refuse(new WebhookHandlingError('raw_body_unavailable', RAW_BODY_GONE)))
    let body: Uint8Array | string
    try {
      body = await pending
    } catch (error) {
      if (error instanceof ClientAbortedError) return
      if (error instanceof WebhookVerificationError) return send(koa, receiver.refuse(error), true)
      throw error
    }
    const answer = await receiver.receive({ headers: koa.req.headers, body, context: { koa } })
    if (koa.res.headersSent) {
      throw new Error(
        `[@email-webhooks/koa] the response was already sent when the receiver's ${answer.status} (${answer.code ?? answer.outcome}) answer was ready: the sender got that earlier answer instead. Nothing but emailWebhook may answer this route; handlers return to acknowledge and throw to get a retry.`,
      )
    }
    send(koa, answer)
  }
  return Object.assign(emailWebhookMiddleware, { stats: receiver.stats, store: receiver.store, inbox: receiver.inbox })
}
