/** Expected answers: a status class (`2xx`, `4xx`) or an exact status (`401`), and the check. */
import { UsageError } from './errors.js'

/** An expectation as written on the command line: `2xx`…`5xx` or a three-digit status. */
export type Expectation = string

/** What the sender counts as success: any 2xx. */
export const SENDER_SUCCESS: Expectation = '2xx'

const PATTERN = /^[1-5](xx|\d\d)$/

/**
 * Validates an `--expect` value.
 * @param value The option's text, e.g. `4xx` or `401`.
 * @throws {UsageError} when it is neither a class nor a status.
 * @example
 * parseExpectation('401') // '401'
 */
export function parseExpectation(value: string): Expectation {
  const normal = value.trim().toLowerCase()
  if (!PATTERN.test(normal)) throw new UsageError(`--expect must be a status class (2xx, 4xx, 5xx) or a status (401, 409), got "${value}".`)
  return normal
}

/**
 * Whether a status meets an expectation; no answer (undefined) never does.
 * @param status The HTTP status, or undefined when the request got no answer.
 * @param expected A class such as `2xx` or an exact status such as `401`.
 * @example
 * meets(204, '2xx') // true
 */
export function meets(status: number | undefined, expected: Expectation): boolean {
  if (status === undefined) return false
  if (expected.endsWith('xx')) return Math.floor(status / 100) === Number(expected[0])
  return status === Number(expected)
}
