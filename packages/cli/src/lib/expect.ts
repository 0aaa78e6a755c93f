/** Expected answers: a status class (`2xx`, `4xx`) or an exact status (`401`), and the check. */
import { InvalidArgumentError } from 'commander'

/** An expectation as written on the command line: `2xx`…`5xx` or a three-digit status. */
export type Expectation = string

/** What the sender counts as success: any 2xx. */
export const SENDER_SUCCESS: Expectation = '2xx'

const PATTERN = /^[1-5](xx|\d\d)$/

/**
 * A commander argParser for `--expect`.
 * @throws {InvalidArgumentError} when the value is neither a class nor a status (usage error, exit 2).
 * @example
 * new Option('--expect <class>').argParser(expectationArg)
 */
export function expectationArg(value: string): Expectation {
  const normal = value.trim().toLowerCase()
  if (!PATTERN.test(normal)) throw new InvalidArgumentError('Give a status class (2xx, 4xx, 5xx) or a status (401, 409).')
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
