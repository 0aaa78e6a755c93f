/**
 * @email-webhooks/express: `emailWebhook(secret, handlers, options?)` as an Express 4/5
 * request handler. The adapter only finds the raw body, hands it with the headers to core's
 * receiver, and writes the answer; all webhook logic lives in @email-webhooks/core.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  bodyTooLargeError,
  createReceiver,
  type DedupStore,
  declaredLengthExceeds,
  type EmailEventHandlers,
  type HandlerContext,
  type ReceiverResponse,
  type ReceiverStats,
  WebhookHandlingError,
  type WebhookOptions,
  type WebhookSecret,
  WebhookVerificationError,
} from '@email-webhooks/core'
// Types only (from @types/express, for Express 4 and 5): the runtime never imports express.
import type { Request, Response } from 'express'

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

/** The middleware: `(req, res, next) => Promise<void>`, usable with Express 4 and 5, with the receiver's counters. */
export type EmailWebhookMiddleware = ((req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => Promise<void>) & {
  /** Counts of handled, duplicate, rejected (by code) and failed (by code) deliveries since it was built. */
  stats(): ReceiverStats
  /**
   * The dedup store this receiver uses (the default SQLite one included), for admin scripts and
   * recovery: `recoverEndpoint({ store: webhook.store(), … })`, or `webhook.store().lookup?.(key)`.
   */
  store(): DedupStore
}

type RawBodyRequest = IncomingMessage & { body?: unknown; rawBody?: unknown; _body?: unknown }

const RAW_BODY_GONE =
  '[@email-webhooks/express] the request body was already parsed (by express.json() or another body parser) and no raw bytes were kept, so the signature cannot be checked. Fix: mount the webhook route before express.json(), or keep the raw body with express.json({ verify: captureRawBody }) using captureRawBody from @email-webhooks/express.'

/**
 * Keeps the raw bytes when a JSON parser runs first: `app.use(express.json({ verify: captureRawBody }))`.
 * @param req The request; `req.rawBody` is set to the exact bytes received.
 * @param _res Unused.
 * @param buffer The raw body as body-parser read it.
 */
export function captureRawBody(req: IncomingMessage, _res: ServerResponse, buffer: Buffer): void {
  ;(req as RawBodyRequest).rawBody = buffer
}

class ClientAborted extends Error {}

function readStream(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    const cleanup = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
    }
    const onData = (chunk: Buffer) => {
      total += chunk.length
      if (total > maxBytes) {
        cleanup()
        // Discard the rest without buffering it; the answer closes the connection.
        req.resume()
        reject(bodyTooLargeError(maxBytes))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total))
    }
    const onError = (error: Error) => {
      cleanup()
      reject(new ClientAborted(error.message))
    }
    const onClose = () => {
      cleanup()
      reject(new ClientAborted('the client closed the connection before the body was complete'))
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
  })
}

/** The raw bytes, in DESIGN order: Buffer body, `req.rawBody`, the unread stream; undefined when a parser consumed them. */
function rawBody(req: RawBodyRequest, maxBytes: number): Promise<Uint8Array | string> | undefined {
  if (req.body instanceof Uint8Array) return Promise.resolve(req.body)
  const kept = req.rawBody
  if (kept instanceof Uint8Array || typeof kept === 'string') return Promise.resolve(kept)
  if (req._body === true || req.readableEnded) return undefined
  if (declaredLengthExceeds(req.headers['content-length'], maxBytes)) return Promise.reject(bodyTooLargeError(maxBytes))
  return readStream(req, maxBytes)
}

/** Methods that would send an answer; a handler calling them would acknowledge before the event is recorded. */
const SENDING = new Set<PropertyKey>([
  'writeHead',
  'write',
  'end',
  'send',
  'json',
  'jsonp',
  'sendStatus',
  'sendFile',
  'download',
  'redirect',
  'render',
  'flushHeaders',
])

function refuseToSend(name: string): never {
  throw new TypeError(
    `[@email-webhooks/express] ctx.res.${name}() was called in a webhook handler. The middleware answers after the event is recorded as done (a 2xx sent earlier would be lost on a crash), so handlers cannot send. Return to acknowledge, throw to get a retry; use ctx.res.locals or headers only.`,
  )
}

/** `res` for handlers: reads and header changes pass through; sending throws. */
function guardedResponse(res: ServerResponse): Response {
  const guarded: ServerResponse = new Proxy(res, {
    get(target, property) {
      if (SENDING.has(property)) return () => refuseToSend(String(property))
      const value = Reflect.get(target, property, target)
      if (typeof value !== 'function') return value
      // Chained calls (`res.status(200).send()`) must stay on the guarded object.
      return (...args: unknown[]) => {
        const result = value.apply(target, args)
        return result === target ? guarded : result
      }
    },
  })
  return guarded as unknown as Response
}

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
export function emailWebhook(
  secret: WebhookSecret,
  handlers: ExpressEventHandlers = {},
  options: ExpressWebhookOptions = {},
): EmailWebhookMiddleware {
  const receiver = createReceiver<ExpressHandlerContext>({ ...options, secret, handlers })
  async function emailWebhookMiddleware(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): Promise<void> {
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
        if (error instanceof ClientAborted) return
        if (error instanceof WebhookVerificationError) {
          send(res, receiver.refuse(error), true)
          return
        }
        throw error
      }
      const context = { req: req as Request, res: guardedResponse(res) }
      const answer = await receiver.receive({ headers: req.headers, body, context })
      // Only something outside the handlers (another middleware, a timer) can have answered by now.
      if (!res.headersSent) send(res, answer)
    } catch (error) {
      next(error)
    }
  }
  return Object.assign(emailWebhookMiddleware, { stats: receiver.stats, store: receiver.store })
}
