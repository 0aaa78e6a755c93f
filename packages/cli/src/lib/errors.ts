/** The CLI's own error: a usage or input problem, with a message that says what to do. */

/** Exit codes of every command; documented in the README. */
export const EXIT = {
  /** Every answer was the expected one (or the signature verified). */
  ok: 0,
  /** The receiver answered something other than expected (or verification failed). */
  unexpected: 1,
  /** Bad arguments, missing secret, unreadable or invalid input file. */
  usage: 2,
  /** No answer at all: connection refused, timeout, DNS failure. */
  unreachable: 3,
  /** Stopped by Ctrl-C (SIGINT); the summary so far was printed. */
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
