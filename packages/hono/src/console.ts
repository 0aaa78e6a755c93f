/**
 * `emailWebhookConsole(options)`: core's operator console as a Hono handler, on any runtime Hono
 * runs on: `app.all('/webhooks-console/*', emailWebhookConsole({ store, auth }))`. The console is
 * served under the route's path (its `/*` left out), or under `basePath` when given; `auth` may be
 * a function of `(request, { c })`.
 */
import { type ConsoleOptions, emailWebhookConsole as createConsole } from '@email-webhooks/core/console'
import type { Context, Env, Handler } from 'hono'

/** What an `auth` function gets besides the web `Request`: Hono's context. */
export interface HonoConsoleContext<E extends Env = Env> {
  c: Context<E>
}

/** Options of the Hono console; see core's `ConsoleOptions`. */
export type HonoConsoleOptions<E extends Env = Env> = ConsoleOptions<HonoConsoleContext<E>>

/** The handler, with `close()` (stops sampling the receiver's counters). */
export type HonoConsoleHandler<E extends Env = Env> = Handler<E> & { close(): void }

/**
 * Serves the operator's console (find events, an email's story, dead letters) under the route's path.
 *
 * @param options `auth` (required: `{ username, password }` or a function), `store` or `receiver`, `actions` (default false: read-only), …
 * @throws {WebhookConsoleError} `auth_required` without `auth`, `store_required` without a store (at startup).
 * @example
 * app.all('/webhooks-console/*', emailWebhookConsole({ store, auth: { username: 'ops', password: process.env.CONSOLE_PASSWORD ?? '' } }))
 */
export function emailWebhookConsole<E extends Env = Env>(options: HonoConsoleOptions<E>): HonoConsoleHandler<E> {
  const handler = createConsole(options)
  const fixed = options.basePath !== undefined
  async function emailWebhookConsoleHandler(c: Context<E>): Promise<Response> {
    const basePath = fixed ? undefined : c.req.routePath.replace(/\/\*$/, '').replace(/\/$/, '')
    return handler.handle(c.req.raw, { ...(basePath === undefined ? {} : { basePath }), context: { c } })
  }
  return Object.assign(emailWebhookConsoleHandler, { close: handler.close })
}
