/**
 * The console's options, checked once when `emailWebhookConsole` is called: authentication is
 * required (a function of the request, or basic-auth credentials), a store is required (or a
 * receiver that has one), actions are off unless asked for.
 */
import { DEFAULT_NAMESPACE, DEFAULT_RETENTION_MS } from '../defaults.js'
import type { ReceiverInbox, ReceiverStats } from '../receiver/types.js'
import type { DedupStore } from '../store/types.js'
import { WebhookConsoleError } from './errors.js'

/** Longest a page waits for the store before it says the store did not answer, by default. */
export const DEFAULT_CONSOLE_STORE_TIMEOUT_MS = 5_000
/** Shortest basic-auth password the console accepts. */
export const MIN_CONSOLE_PASSWORD_LENGTH = 12

/** Basic-auth credentials; the browser asks for them, the console compares them in constant time. */
export interface ConsoleCredentials {
  username: string
  password: string
}

/** Decides whether a request may see the console (your app's session, an SSO header, …): true lets it in, anything else is 401. */
export type ConsoleAuthCheck<Ctx = undefined> = (request: Request, context: Ctx) => boolean | Promise<boolean>

/** How the console authenticates: a check of your own, or basic-auth credentials. */
export type ConsoleAuth<Ctx = undefined> = ConsoleCredentials | ConsoleAuthCheck<Ctx>

/** What the console reads of a receiver in the same process: its counters, and its store and inbox when it has them. */
export interface ConsoleReceiver {
  stats(): ReceiverStats
  store?(): DedupStore
  readonly inbox?: ReceiverInbox | undefined
}

/** Options of `emailWebhookConsole` (and of every adapter's mount). */
export interface ConsoleOptions<Ctx = undefined> {
  /**
   * Who may see the console: `{ username, password }` (HTTP basic auth, the password at least 12
   * characters, compared in constant time) or `(request, context) => boolean | Promise<boolean>`
   * checking your own session (`context` is the framework's). Without it the console is not built
   * (`auth_required`).
   */
  auth: ConsoleAuth<Ctx>
  /**
   * The `DedupStore` to show.
   * @defaultValue the receiver's store
   */
  store?: DedupStore
  /**
   * The receiver in this process (the handler an adapter's `emailWebhook()` returned): its counters
   * draw the deliveries chart, and its store is used when `store` is not given.
   */
  receiver?: ConsoleReceiver
  /**
   * Allow retrying and purging dead letters (a POST from the console's own page, with its CSRF
   * token); read-only without it.
   * @defaultValue `false`
   */
  actions?: boolean
  /**
   * The receiver's `namespace` (dedup keys are `namespace:webhook-id`).
   * @defaultValue `"default"`
   */
  namespace?: string
  /**
   * The receiver's `retentionMs`, to tell when a done record was written, whole ms.
   * @defaultValue 7 days
   */
  retentionMs?: number
  /**
   * Where the console is served, such as `/webhooks-console`. The Express, Hono and Fastify mounts
   * find it themselves; Koa needs it.
   * @defaultValue `''` (the root)
   */
  basePath?: string
  /**
   * Longest wait for the store per read, whole ms; past it the page says the store did not answer.
   * The overview's counts on SQLite stop at 60 % of it and show what they counted as "at least".
   * @defaultValue `5000`
   */
  storeTimeoutMs?: number
}

/** The options after the checks. */
export interface ResolvedConsoleOptions<Ctx> {
  auth: ConsoleAuth<Ctx>
  store: DedupStore
  receiver: ConsoleReceiver | undefined
  actions: boolean
  namespace: string
  retentionMs: number
  basePath: string
  storeTimeoutMs: number
}

function wholePositive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value
  throw new WebhookConsoleError('invalid_options', `${name} must be a whole number of milliseconds ≥ 1, got ${String(value)}.`)
}

function checkAuth<Ctx>(auth: unknown): ConsoleAuth<Ctx> {
  if (auth === undefined || auth === null) {
    throw new WebhookConsoleError(
      'auth_required',
      'emailWebhookConsole needs auth: the console shows every event your receiver recorded, so it is never served without authentication. Pass auth: { username, password } (basic auth, the password from an environment variable, at least 12 characters) or auth: (request) => boolean that checks your own session.',
    )
  }
  if (typeof auth === 'function') return auth as ConsoleAuth<Ctx>
  const { username, password } = auth as Partial<ConsoleCredentials>
  if (typeof username !== 'string' || username.length === 0 || username.includes(':')) {
    throw new WebhookConsoleError('auth_invalid', 'auth.username must be a non-empty string without ":" (basic auth cannot carry one).')
  }
  if (typeof password !== 'string' || password.length < MIN_CONSOLE_PASSWORD_LENGTH) {
    throw new WebhookConsoleError(
      'auth_invalid',
      `auth.password must be a string of at least ${MIN_CONSOLE_PASSWORD_LENGTH} characters (read it from an environment variable; \`openssl rand -base64 18\` makes one).`,
    )
  }
  return { username, password }
}

function checkBasePath(basePath: unknown): string {
  if (basePath === undefined || basePath === '' || basePath === '/') return ''
  if (typeof basePath !== 'string' || !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(basePath)) {
    throw new WebhookConsoleError(
      'invalid_options',
      `basePath must be a path such as '/webhooks-console' (no trailing slash), got ${JSON.stringify(basePath)}.`,
    )
  }
  return basePath
}

/**
 * Checks the options once.
 * @throws {WebhookConsoleError} `auth_required`, `auth_invalid`, `store_required` or `invalid_options`.
 */
export function resolveConsoleOptions<Ctx>(options: ConsoleOptions<Ctx>): ResolvedConsoleOptions<Ctx> {
  if (options === null || typeof options !== 'object') {
    throw new WebhookConsoleError('auth_required', 'emailWebhookConsole needs an options object: { store, auth }.')
  }
  const auth = checkAuth<Ctx>(options.auth)
  const receiver = options.receiver
  if (receiver !== undefined && (receiver === null || typeof receiver.stats !== 'function')) {
    throw new WebhookConsoleError(
      'invalid_options',
      'receiver must be the handler emailWebhook() returned, or a receiver from createReceiver() (it has stats()).',
    )
  }
  const store = options.store ?? receiver?.store?.()
  if (store === undefined || store === null || typeof store.claim !== 'function') {
    throw new WebhookConsoleError(
      'store_required',
      'emailWebhookConsole needs the store your receiver uses: store: the same DedupStore object, or receiver: the handler emailWebhook() returned.',
    )
  }
  if (options.actions !== undefined && typeof options.actions !== 'boolean') {
    throw new WebhookConsoleError('invalid_options', 'actions must be true or false (default false: read-only).')
  }
  const namespace = options.namespace ?? DEFAULT_NAMESPACE
  if (typeof namespace !== 'string' || namespace.length === 0) {
    throw new WebhookConsoleError('invalid_options', 'namespace must be the receiver\'s namespace, a non-empty string (default "default").')
  }
  return {
    auth,
    store,
    receiver,
    actions: options.actions ?? false,
    namespace,
    retentionMs: wholePositive('retentionMs', options.retentionMs, DEFAULT_RETENTION_MS),
    basePath: checkBasePath(options.basePath),
    storeTimeoutMs: wholePositive('storeTimeoutMs', options.storeTimeoutMs, DEFAULT_CONSOLE_STORE_TIMEOUT_MS),
  }
}
