/**
 * @email-webhooks/hono: `emailWebhook(secret, handlers, options?)` as a Hono handler, on any
 * runtime Hono runs on. A body whose content-length passes `maxBodyBytes` is refused before it
 * is read; a chunked body is streamed with core's bounded reader and refused as soon as it passes
 * the limit. The exact bytes go to core's receiver (never text re-encoded from Hono's body cache),
 * stay in the cache (so `c.req.json()` still works afterwards), and the answer goes out through
 * `c.body`, which @hono/node-server sends on its fast path.
 */
import {
  bodyTooLargeError,
  type CheckedEmailEventHandlers,
  createReceiver,
  declaredLength,
  type EmailEventHandlers,
  type EmailEventType,
  type HandlerContext,
  type Receiver,
  type ReceiverResponse,
  readBodyWithLimit,
  WebhookHandlingError,
  type WebhookOptions,
  type WebhookSecret,
  WebhookVerificationError,
} from '@email-webhooks/core'
import type { Context, Env, Handler } from 'hono'

export { emailWebhookConsole, type HonoConsoleContext, type HonoConsoleHandler, type HonoConsoleOptions } from './console.js'

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

/** The Hono handler, with the receiver's counters. */
export type EmailWebhookHandler<E extends Env = Env> = Handler<E> & Pick<Receiver, 'stats' | 'store' | 'inbox'>

const RAW_BODY_GONE =
  '[@email-webhooks/hono] an earlier middleware read the body as text or JSON (c.req.json(), c.req.text(), c.req.parseBody()); Hono then keeps only decoded text, so the exact signed bytes are gone and re-encoding them would not verify. Fix: mount emailWebhook before that middleware for this route, or have it read c.req.arrayBuffer() (Hono derives json() and text() from it).'

type BodyCache = Record<string, Promise<unknown> | undefined>

/**
 * The raw body, read at most `maxBytes` into it, and cached for `c.req.json()` / `c.req.text()`;
 * undefined when an earlier middleware kept only decoded text. With a `content-length` (already
 * checked against the limit) the HTTP layer frames the body, so `c.req.arrayBuffer()` reads it (on
 * @hono/node-server without building a web stream). Without one (chunked) the stream is read under
 * the limit. Bytes an earlier middleware cached (`arrayBuffer`, `blob`) are reused as they are.
 */
async function readBody<E extends Env>(c: Context<E>, maxBytes: number, framed: boolean): Promise<ArrayBuffer | undefined> {
  const cache = c.req.bodyCache as BodyCache
  for (const key in cache) {
    if (key === 'arrayBuffer') return (await cache.arrayBuffer) as ArrayBuffer
    if (key === 'blob') return (await (cache.blob as Promise<Blob>)).arrayBuffer()
  }
  // Anything else cached (text, json, formData) is decoded: the bytes are gone.
  for (const _ in cache) return undefined
  if (c.req.raw.bodyUsed) return undefined
  if (framed) return c.req.arrayBuffer()
  const bytes = await readBodyWithLimit(c.req.raw.body, maxBytes)
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  const buffer = (whole ? bytes.buffer : bytes.slice().buffer) as ArrayBuffer
  // Hono keeps promises in its body cache (its type says ArrayBuffer); json() and text() derive from this one.
  cache.arrayBuffer = Promise.resolve(buffer)
  return buffer
}

function answer<E extends Env>(c: Context<E>, response: ReceiverResponse): Response {
  // c.body, not new Response(): @hono/node-server writes it without building a web Response.
  return c.body(response.body, response.status as 200, response.headers)
}

/**
 * Receives email webhooks on a Hono route.
 *
 * @param secret The endpoint secret, or several during rotation.
 * @param handlers Handlers keyed by email event type; each gets `(event, ctx)` with `ctx.c`, `ctx.signal`.
 * @param options See core's `WebhookOptions` (store, onUnknown, onError, logger, leaseMs, …).
 * @returns A Hono handler, generic over the app's `Env`, with `stats()`.
 * @throws {TypeError} when the secret or an option is invalid (at startup, not per request).
 * @throws {DedupStoreError} when no store is given and Node's default SQLite store cannot be opened.
 * @example
 * app.post('/hooks', emailWebhook(process.env.EMAIL_WEBHOOK_SECRET ?? '', { 'email.bounced': (event) => markBounced(event.data.id) }))
 */
export function emailWebhook<E extends Env = Env, K extends string = EmailEventType>(
  secret: WebhookSecret,
  handlers: CheckedEmailEventHandlers<K, HonoContext<E>> = {},
  options: HonoWebhookOptions<E> = {},
): EmailWebhookHandler<E> {
  const receiver = createReceiver<HonoHandlerContext<E>>({ ...options, secret, handlers })
  async function emailWebhookHandler(c: Context<E>): Promise<Response> {
    const declared = declaredLength(c.req.header('content-length'))
    if (declared !== undefined && declared > receiver.maxBodyBytes) {
      return answer(c, receiver.refuse(bodyTooLargeError(receiver.maxBodyBytes)))
    }
    let body: ArrayBuffer | undefined
    try {
      body = await readBody(c, receiver.maxBodyBytes, declared !== undefined)
    } catch (error) {
      if (error instanceof WebhookVerificationError) return answer(c, receiver.refuse(error))
      // The client hung up mid-body: nothing was claimed and nobody reads the answer; do not
      // let Hono's error handler log a stack for it.
      if (c.req.raw.signal.aborted || (error as { code?: unknown }).code === 'ECONNRESET') return c.body(null, 400)
      throw error
    }
    if (body === undefined) return answer(c, receiver.refuse(new WebhookHandlingError('raw_body_unavailable', RAW_BODY_GONE)))
    // c.req.header() reads node-server's incoming headers directly, without building a Request.
    const headers = { get: (name: string): string | null => c.req.header(name) ?? null }
    return answer(c, await receiver.receive({ headers, body, context: { c } }))
  }
  return Object.assign(emailWebhookHandler, { stats: receiver.stats, store: receiver.store, inbox: receiver.inbox })
}
