/** The CLI's own error: a usage or input problem, with a message that says what to do. */

/** Exit codes of every command (the docs' command line reference lists them from here). */
export const EXIT = {
  /** Every answer was the expected one (`verify`: the request is valid). */
  ok: 0,
  /**
   * At least one answer was not (`verify`: the request is refused, with its code; `recover`: a retry
   * failed or the list was truncated; `emails reconcile`: an event failed or was refused, a read
   * failed, an id was not a UUID, the run stopped; `inbox show`/`retry`: no such entry;
   * `inbox work --once`: an entry became dead; `inbox`: the store failed).
   */
  unexpected: 1,
  /**
   * Usage: bad or conflicting options, no secret, an unreadable file, a bad replay line, no store or
   * a store without an inbox, a handlers module that cannot be loaded. Nothing was sent.
   */
  usage: 2,
  /** No answer: connection refused, DNS failure, timeout (`inbox`: the store could not be reached). */
  unreachable: 3,
  /**
   * A load, a `recover` or a `reconcile` stopped with Ctrl-C; the summary (or report) so far was
   * printed. `inbox work` stopped by a second signal ends by that signal instead (shells show 130
   * for SIGINT, 143 for SIGTERM), after its summary so far; with this code when its handlers module
   * listens for that signal too.
   */
  interrupted: 130,
} as const

/**
 * A problem with the command line or its inputs; printed as one line, exit code 2.
 * @example
 * throw new UsageError('--count must be a whole number from 1 to 1000000.')
 */
export class UsageError extends Error {
  override readonly name: string = 'UsageError'
  readonly exitCode: number = EXIT.usage
}

/**
 * An error's message without the `[package] ` prefix core puts on its errors, for one-line output.
 * @example
 * plainMessage(new TypeError('[@email-webhooks/core] bad secret')) // 'bad secret'
 */
export function plainMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.replace(/^\[[^\]]+\] /, '')
}
