/**
 * `emailWebhookConsole(options)`: core's operator console as Express middleware, mounted with
 * `app.use('/webhooks-console', emailWebhookConsole({ store, auth }))`. The console is served
 * under the mount path (`req.baseUrl`); `auth` may be a function of `(request, { req, res })`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  type ConsoleOptions,
  consoleRequestFromNode,
  emailWebhookConsole as createConsole,
  writeConsoleResponse,
} from '@email-webhooks/core/console'

/** What an `auth` function gets besides the web `Request`: Express's own request and response. */
export interface ExpressConsoleContext {
  req: IncomingMessage & { user?: unknown }
  res: ServerResponse
}

/** Options of the Express console; see core's `ConsoleOptions`. */
export type ExpressConsoleOptions = ConsoleOptions<ExpressConsoleContext>

/** The middleware, with `close()` (stops sampling the receiver's counters). */
export type ExpressConsoleMiddleware = ((req: IncomingMessage, res: ServerResponse, next: (error?: Error) => void) => Promise<void>) & {
  close(): void
}

type ExpressRequest = IncomingMessage & { originalUrl?: string; baseUrl?: string; protocol?: string; body?: unknown }

/**
 * Serves the operator's console (find events, an email's story, dead letters) under the path it is mounted on.
 *
 * @param options `auth` (required: `{ username, password }` or a function), `store` or `receiver`, `actions` (default false: read-only), …
 * @throws {WebhookConsoleError} `auth_required` without `auth`, `store_required` without a store (at startup).
 * @example
 * app.use('/webhooks-console', emailWebhookConsole({ store, auth: { username: 'ops', password: process.env.CONSOLE_PASSWORD ?? '' } }))
 */
export function emailWebhookConsole(options: ExpressConsoleOptions): ExpressConsoleMiddleware {
  const handler = createConsole(options)
  async function emailWebhookConsoleMiddleware(req: IncomingMessage, res: ServerResponse, next: (error?: Error) => void): Promise<void> {
    try {
      const r = req as ExpressRequest
      const request = await consoleRequestFromNode(r, { path: r.originalUrl ?? r.url ?? '/', protocol: r.protocol, parsedBody: r.body })
      await writeConsoleResponse(res, await handler.handle(request, { basePath: r.baseUrl ?? '', context: { req, res } }))
    } catch (error) {
      next(error as Error)
    }
  }
  return Object.assign(emailWebhookConsoleMiddleware, { close: handler.close })
}
