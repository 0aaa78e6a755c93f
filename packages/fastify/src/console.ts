/**
 * `emailWebhookConsole`: core's operator console as an encapsulated Fastify 5 plugin,
 * `await app.register(emailWebhookConsole, { prefix: '/webhooks-console', store, auth })`. In its
 * own context it reads the console's small forms as text; the rest of the app keeps its parsers.
 * `auth` may be a function of `(request, { request, reply })`.
 */
import {
  type ConsoleOptions,
  consoleRequestFromNode,
  emailWebhookConsole as createConsole,
  WebhookConsoleError,
} from '@email-webhooks/core/console'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/** What an `auth` function gets besides the web `Request`: Fastify's request and reply. */
export interface FastifyConsoleContext {
  request: FastifyRequest
  reply: FastifyReply
}

/** Options of the plugin: core's `ConsoleOptions`; the path is the register `prefix`. */
export type FastifyConsoleOptions = ConsoleOptions<FastifyConsoleContext>

const FORM_LIMIT = 64 * 1024

/**
 * Registers the operator's console (find events, an email's story, dead letters) under the register `prefix`.
 *
 * @param fastify The encapsulated instance Fastify gives the plugin.
 * @param options `auth` (required), `store` or `receiver`, `actions` (default false: read-only), …
 * @throws {WebhookConsoleError} `auth_required` without `auth`, `store_required` without a store (from `register`).
 * @example
 * await app.register(emailWebhookConsole, { prefix: '/webhooks-console', store, auth: { username: 'ops', password: process.env.CONSOLE_PASSWORD ?? '' } })
 */
export async function emailWebhookConsole(fastify: FastifyInstance, options: FastifyConsoleOptions): Promise<void> {
  const {
    prefix: _prefix,
    logLevel: _logLevel,
    logSerializers: _logSerializers,
    ...rest
  } = options as FastifyConsoleOptions & { prefix?: unknown; logLevel?: unknown; logSerializers?: unknown }
  if (rest.basePath !== undefined) {
    throw new WebhookConsoleError(
      'invalid_options',
      'with Fastify, give the path as the register prefix ({ prefix: "/webhooks-console" }), not basePath.',
    )
  }
  const handler = createConsole(rest)
  fastify.addHook('onClose', async () => handler.close())
  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_request, body, done) =>
    done(null, body),
  )
  async function emailWebhookConsoleRoute(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const web = await consoleRequestFromNode(request.raw, {
      path: request.raw.url ?? request.url,
      protocol: request.protocol,
      parsedBody: request.body,
    })
    const response = await handler.handle(web, { basePath: fastify.prefix, context: { request, reply } })
    reply.code(response.status)
    response.headers.forEach((value, name) => {
      if (name !== 'set-cookie') reply.header(name, value)
    })
    const cookies = response.headers.getSetCookie()
    if (cookies.length > 0) reply.header('set-cookie', cookies)
    return reply.send(Buffer.from(await response.arrayBuffer()))
  }
  fastify.all('/', emailWebhookConsoleRoute)
  fastify.all('/*', emailWebhookConsoleRoute)
}
