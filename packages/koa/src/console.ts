/**
 * `emailWebhookConsole(options)`: core's operator console as Koa 2/3 middleware that answers the
 * requests under its `basePath` and passes every other one on:
 * `app.use(emailWebhookConsole({ basePath: '/webhooks-console', store, auth }))`.
 * `auth` may be a function of `(request, { koa })`.
 */
import {
  type ConsoleOptions,
  consoleRequestFromNode,
  emailWebhookConsole as createConsole,
  WebhookConsoleError,
} from '@email-webhooks/core/console'
import type { DefaultContext, DefaultState, Middleware, Next, ParameterizedContext } from 'koa'

/** What an `auth` function gets besides the web `Request`: the Koa context. */
export interface KoaConsoleContext<StateT = DefaultState, ContextT = DefaultContext> {
  koa: ParameterizedContext<StateT, ContextT>
}

/** Options of the Koa console: core's `ConsoleOptions`, with `basePath` required (Koa has no mount path). */
export type KoaConsoleOptions<StateT = DefaultState, ContextT = DefaultContext> = ConsoleOptions<KoaConsoleContext<StateT, ContextT>> & {
  basePath: string
}

/** The middleware, with `close()` (stops sampling the receiver's counters). */
export type KoaConsoleMiddleware<StateT = DefaultState, ContextT = DefaultContext> = Middleware<StateT, ContextT> & { close(): void }

/**
 * Serves the operator's console (find events, an email's story, dead letters) under `basePath`.
 *
 * @param options `basePath` and `auth` (required), `store` or `receiver`, `actions` (default false: read-only), …
 * @throws {WebhookConsoleError} `invalid_options` without `basePath`, `auth_required` without `auth`, `store_required` without a store.
 * @example
 * app.use(emailWebhookConsole({ basePath: '/webhooks-console', store, auth: { username: 'ops', password: process.env.CONSOLE_PASSWORD ?? '' } }))
 */
export function emailWebhookConsole<StateT = DefaultState, ContextT = DefaultContext>(
  options: KoaConsoleOptions<StateT, ContextT>,
): KoaConsoleMiddleware<StateT, ContextT> {
  const basePath = options?.basePath
  if (typeof basePath !== 'string' || !basePath.startsWith('/') || basePath === '/') {
    throw new WebhookConsoleError('invalid_options', "Koa has no mount path: give basePath, such as '/webhooks-console'.")
  }
  const handler = createConsole(options)
  async function emailWebhookConsoleMiddleware(koa: ParameterizedContext<StateT, ContextT>, next: Next): Promise<void> {
    if (koa.path !== basePath && !koa.path.startsWith(`${basePath}/`)) return next()
    const request = await consoleRequestFromNode(koa.req, {
      path: koa.originalUrl,
      protocol: koa.protocol,
      parsedBody: (koa.request as { body?: unknown }).body,
    })
    const response = await handler.handle(request, { context: { koa } })
    koa.status = response.status
    response.headers.forEach((value, name) => {
      if (name !== 'set-cookie') koa.set(name, value)
    })
    const cookies = response.headers.getSetCookie()
    if (cookies.length > 0) koa.set('set-cookie', cookies)
    koa.body = Buffer.from(await response.arrayBuffer())
  }
  return Object.assign(emailWebhookConsoleMiddleware, { close: handler.close })
}
