/**
 * @email-webhooks/core/console: the operator's console as a web-standard handler
 * (`Request → Response`): find any event, see an email's story, retry and purge dead letters, in a
 * page served by your own app from the store your receiver uses. Authentication is required, it is
 * read-only unless `actions: true`, every action is a same-origin POST with a CSRF token, and its
 * pages load nothing but their own stylesheet (no script). The adapters mount it in one line each.
 */

import type { ConsoleSettings } from './context.js'
import { contractSource } from './contract-source.js'
import { type ConsoleRequestInit, createConsoleHandler } from './handler.js'
import { type ConsoleOptions, resolveConsoleOptions } from './options.js'
import { registeredConsoleSource } from './registry.js'
import { DeliverySampler } from './sampler.js'

export { WebhookConsoleError, type WebhookConsoleErrorCode } from './errors.js'
export type { ConsoleRequestInit } from './handler.js'
export {
  type ConsoleAuth,
  type ConsoleAuthCheck,
  type ConsoleCredentials,
  type ConsoleOptions,
  type ConsoleReceiver,
  DEFAULT_CONSOLE_STORE_TIMEOUT_MS,
  MIN_CONSOLE_PASSWORD_LENGTH,
} from './options.js'
export { CONSOLE_CSP } from './respond.js'

/** The console: call it with a `Request`; adapters call `handle` with their mount path and framework objects. */
export interface ConsoleHandler<Ctx = undefined> {
  (request: Request): Promise<Response>
  /** Answers `request` mounted at `init.basePath`, passing `init.context` to an `auth` function. */
  handle(request: Request, init?: ConsoleRequestInit<Ctx>): Promise<Response>
  /** Stops sampling the receiver's counters (an unref'd timer: it never keeps a process alive). */
  close(): void
}

/**
 * Builds the console over a store (and, optionally, the receiver in this process).
 *
 * @param options `auth` (required), `store` or `receiver`, `actions` (default false), `namespace`, `retentionMs`, `basePath`, `storeTimeoutMs`.
 * @returns `(request: Request) => Promise<Response>`, with `handle(request, { basePath, context })` and `close()`.
 * @throws {WebhookConsoleError} `auth_required` without `auth`, `auth_invalid`, `store_required`, `invalid_options`.
 * @example
 * const handleConsole = emailWebhookConsole({ store, auth: { username: 'ops', password: process.env.CONSOLE_PASSWORD ?? '' }, basePath: '/webhooks-console' })
 * Bun.serve({ fetch: (request) => handleConsole(request) })
 */
export function emailWebhookConsole<Ctx = undefined>(options: ConsoleOptions<Ctx>): ConsoleHandler<Ctx> {
  const resolved = resolveConsoleOptions(options)
  const { store, receiver } = resolved
  const source = registeredConsoleSource(store)?.() ?? contractSource(store)
  const settings: ConsoleSettings = {
    actions: resolved.actions,
    namespace: resolved.namespace,
    retentionMs: resolved.retentionMs,
    basePath: resolved.basePath,
    storeTimeoutMs: resolved.storeTimeoutMs,
    source,
    store,
    inbox: store.inbox,
    receiver,
    sampler: receiver ? new DeliverySampler(receiver) : undefined,
  }
  const handle = createConsoleHandler(resolved.auth, settings)
  const consoleHandler = (request: Request): Promise<Response> => handle(request)
  return Object.assign(consoleHandler, { handle, close: () => settings.sampler?.stop() })
}
export {
  consoleRequestFromNode,
  type NodeConsoleRequest,
  type NodeConsoleResponse,
  type NodeRequestParts,
  writeConsoleResponse,
} from './node.js'
