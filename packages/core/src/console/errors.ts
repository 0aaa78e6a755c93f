/**
 * `WebhookConsoleError`: a console that cannot be built as asked (thrown by `emailWebhookConsole`
 * when it is called, never per request). The message names the option and says what to do.
 */

/** The prefix of every console message. */
export const CONSOLE_PACKAGE = '[@email-webhooks/core/console]'

/** Why the console could not be built. */
export type WebhookConsoleErrorCode =
  /** No `auth`: the console is never served without authentication. Pass `{ username, password }` or a check of your own. */
  | 'auth_required'
  /**
   * `auth` is neither a function nor `{ username, password }` of usable strings: a password under
   * 12 characters, an empty user name or one with `:`. Use a longer password (from an environment variable).
   */
  | 'auth_invalid'
  /** Neither `store` nor `receiver` (with its store) was given: pass the receiver's store, or the receiver. */
  | 'store_required'
  /**
   * Another option is out of range or of the wrong type: `basePath`, `retentionMs`, `storeTimeoutMs`,
   * `actions` or `namespace`; Koa without `basePath`; Fastify with `basePath` instead of `prefix`.
   * Fix the option the message names.
   */
  | 'invalid_options'

/**
 * The console's options are unusable.
 * @example
 * try { emailWebhookConsole({ store }) } catch (error) { if (error instanceof WebhookConsoleError) console.error(error.code) }
 */
export class WebhookConsoleError extends Error {
  override readonly name = 'WebhookConsoleError'
  readonly code: WebhookConsoleErrorCode

  constructor(code: WebhookConsoleErrorCode, message: string) {
    super(`${CONSOLE_PACKAGE} ${message}`)
    this.code = code
  }
}
