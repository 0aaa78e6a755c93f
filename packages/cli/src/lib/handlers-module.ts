/**
 * The user's handlers module of `inbox work --handlers <module>`: an ES module or a CommonJS one,
 * its path relative to the working folder, exporting `handlers` (and optionally `options`, the
 * receiver's options, and `close`, called once the worker stopped, to end the module's own
 * connections). Options only a request needs are dropped, so the module can share the object it
 * passes to `emailWebhook`.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { EmailEventHandlers, InboxWorkerOptions } from '@email-webhooks/core'
import { UsageError } from './errors.js'

/** Receiver options the worker does not use: they concern the request, which was answered long ago. */
const REQUEST_ONLY = ['secret', 'mode', 'toleranceSeconds', 'maxBodyBytes'] as const
const REQUEST_ONLY_INBOX = ['inRequest', 'worker'] as const

/** What the module gives the worker. */
export interface HandlersModule {
  handlers: EmailEventHandlers | undefined
  /** Its `options`, without what only a request needs and without `store` (the worker uses --store). */
  options: Omit<InboxWorkerOptions, 'handlers'>
  /** Whether its options named a store, which the worker does not use. */
  ignoredStore: boolean
  close: (() => unknown) | undefined
  /** The event types it has handlers for, for the start line. */
  types: string[]
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

async function importModule(path: string, full: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(full).href)) as Record<string, unknown>
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const hint =
      code === 'ERR_UNKNOWN_FILE_EXTENSION'
        ? " Node runs JavaScript: compile the module, or let Node load TypeScript (NODE_OPTIONS='--import tsx')."
        : ''
    const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    throw new UsageError(`Cannot load the handlers module ${path}: ${why}.${hint}`)
  }
}

/** The worker's options from the module's: request-only ones and `store` dropped, the caller's object left as it is. */
function workerOptions(raw: Record<string, unknown>): { options: Omit<InboxWorkerOptions, 'handlers'>; ignoredStore: boolean } {
  const options: Record<string, unknown> = { ...raw }
  for (const name of REQUEST_ONLY) delete options[name]
  if (isObject(options.inbox)) {
    const inbox = { ...options.inbox }
    for (const name of REQUEST_ONLY_INBOX) delete inbox[name]
    options.inbox = inbox
  }
  const ignoredStore = options.store !== undefined
  delete options.store
  return { options: options as Omit<InboxWorkerOptions, 'handlers'>, ignoredStore }
}

/**
 * Loads the handlers module.
 * @param path Its path, relative to `cwd`.
 * @param cwd The working folder; default `process.cwd()`.
 * @throws {UsageError} when it does not exist, cannot be loaded, or exports no handlers.
 * @example
 * const { handlers, options } = await loadHandlersModule('./handlers.js')
 */
export async function loadHandlersModule(path: string, cwd: string = process.cwd()): Promise<HandlersModule> {
  const full = resolve(cwd, path)
  if (!existsSync(full)) throw new UsageError(`No handlers module at ${full} (--handlers is relative to the working folder, ${cwd}).`)
  let exported = await importModule(path, full)
  // CommonJS (module.exports = { handlers }) and `export default { handlers }` arrive as the default export.
  if (exported.handlers === undefined && exported.options === undefined && isObject(exported.default)) exported = exported.default
  const { handlers, options = {}, close } = exported
  const shape = "export const handlers = { 'email.bounced': async (event) => … } (ESM), or module.exports = { handlers } (CommonJS)"
  if (handlers !== undefined && !isObject(handlers))
    throw new UsageError(`The handlers module ${path}: handlers must be an object keyed by event type: ${shape}.`)
  if (!isObject(options)) throw new UsageError(`The handlers module ${path}: options must be an object (the receiver's options).`)
  if (close !== undefined && typeof close !== 'function') throw new UsageError(`The handlers module ${path}: close must be a function.`)
  if (handlers === undefined && options.onEvent === undefined && options.onUnknown === undefined)
    throw new UsageError(`The handlers module ${path} exports no handlers: ${shape}.`)
  return {
    handlers: handlers as EmailEventHandlers | undefined,
    ...workerOptions(options),
    close: close as (() => unknown) | undefined,
    types: Object.keys(handlers ?? {}),
  }
}
