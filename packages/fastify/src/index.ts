/**
 * @email-webhooks/fastify: an encapsulated Fastify 5 plugin,
 * `await app.register(emailWebhook, { path, secret, handlers, ...options })`. Inside its own
 * context it replaces every content-type parser with one that keeps the raw bytes (so the rest of
 * the app keeps parsing JSON), limited by Fastify's `bodyLimit` set from `maxBodyBytes`; core's
 * receiver does the rest, and the answer goes out through `reply`.
 */
import {
  bodyTooLargeError,
  createReceiver,
  type EmailEventHandlers,
  type HandlerContext,
  type ReceiverResponse,
  sendGuard,
  WebhookHandlingError,
  type WebhookOptions,
  type WebhookSecret,
} from '@email-webhooks/core'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

export { emailWebhookConsole, type FastifyConsoleContext, type FastifyConsoleOptions } from './console.js'

/** Fastify's request and reply, added to every handler's context. */
export interface FastifyHandlerContext {
  /** The Fastify request (`ctx.request.log`, `ctx.request.ip`, `ctx.request.params`, …). */
  request: FastifyRequest
  /** The reply, for headers; `send`, `redirect` and `hijack` throw (the plugin answers after the event is recorded). */
  reply: FastifyReply
}

/** Handler context inside Fastify: core's context plus `request` and `reply`. */
export type FastifyContext = HandlerContext & FastifyHandlerContext

/** Handlers keyed by email event type, with the Fastify context. */
export type FastifyEventHandlers = EmailEventHandlers<FastifyContext>

/** Options of the plugin: the route, the secret, the handlers, and core's `WebhookOptions`. */
export interface FastifyWebhookOptions extends WebhookOptions<FastifyContext> {
  /**
   * The POST route that receives deliveries, such as `'/hooks'`, under the register `prefix` if
   * any. Checked when the plugin is registered.
   */
  path: string
  /** The endpoint secret, or several during a rotation. Checked when the plugin is registered. */
  secret: WebhookSecret
  /**
   * Handlers keyed by email event type (a misspelt key does not compile).
   * @defaultValue `{}`
   */
  handlers?: FastifyEventHandlers
}

const PACKAGE = '[@email-webhooks/fastify]'
const SENDING = new Set<PropertyKey>(['send', 'redirect', 'hijack', 'callNotFound', 'sendFile', 'download', 'view'])
const guard = sendGuard(SENDING, (name) => {
  throw new TypeError(
    `${PACKAGE} ctx.reply.${name}() was called in a webhook handler. The plugin answers after the event is recorded as done (a 2xx sent earlier would be lost on a crash), so handlers cannot send. Return to acknowledge, throw to get a retry; set headers only.`,
  )
})
const BODY_GONE = `${PACKAGE} request.body is not the raw bytes: a preValidation or preHandler hook replaced it, so the signature cannot be checked. Leave request.body alone on the webhook route.`

function send(reply: FastifyReply, answer: ReceiverResponse, close = false): FastifyReply {
  reply.code(answer.status).headers(answer.headers)
  if (close) reply.header('connection', 'close')
  return reply.send(answer.body)
}

/**
 * Registers a POST route that receives email webhooks, with its own raw-body parser.
 *
 * @param fastify The encapsulated instance Fastify gives the plugin.
 * @param options `path`, `secret`, `handlers`, and core's options (store, onUnknown, onError, maxBodyBytes (1 MiB, Fastify's `bodyLimit` on the route), …).
 * @throws {TypeError} when `path`, the secret or an option is invalid (from `register`, at startup).
 * @throws {DedupStoreError} when no store is given and Node's default SQLite store cannot be opened.
 * @example
 * await app.register(emailWebhook, {
 *   path: '/hooks',
 *   secret: process.env.EMAIL_WEBHOOK_SECRET ?? '',
 *   handlers: { 'email.bounced': (event) => markBounced(event.data.id) },
 * })
 */
export async function emailWebhook(fastify: FastifyInstance, options: FastifyWebhookOptions): Promise<void> {
  // Fastify hands the plugin its own register options too (prefix, logLevel, logSerializers): not ours.
  const {
    path,
    secret,
    handlers = {},
    prefix: _prefix,
    logLevel: _logLevel,
    logSerializers: _logSerializers,
    ...rest
  } = options as typeof options & { prefix?: unknown; logLevel?: unknown; logSerializers?: unknown }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError(`${PACKAGE} options.path must be the route to receive deliveries on, starting with '/' (such as '/hooks').`)
  }
  const receiver = createReceiver<FastifyHandlerContext>({ ...rest, secret, handlers })
  // Inbox mode: the worker stops (its running handlers end) when the app closes.
  if (receiver.inbox) fastify.addHook('onClose', () => receiver.inbox?.stop())
  const bodyLimit = receiver.maxBodyBytes
  // This context only: the rest of the app keeps its JSON and other parsers.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body))
  fastify.setErrorHandler((error, _request, reply) => {
    // Fastify refuses a body over bodyLimit (by content-length before reading, or while streaming).
    if ((error as { code?: unknown }).code !== 'FST_ERR_CTP_BODY_TOO_LARGE') throw error
    return send(reply, receiver.refuse(bodyTooLargeError(bodyLimit)), true)
  })
  fastify.post(path, { bodyLimit }, async function emailWebhookRoute(request, reply) {
    const body = request.body ?? new Uint8Array(0)
    if (!(body instanceof Uint8Array)) return send(reply, receiver.refuse(new WebhookHandlingError('raw_body_unavailable', BODY_GONE)))
    return send(reply, await receiver.receive({ headers: request.headers, body, context: { request, reply: guard(reply) } }))
  })
}
