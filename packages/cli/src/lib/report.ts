/** One readable line per request, and the JSON record of the same facts. */
import { EXIT } from './errors.js'
import { meets } from './expect.js'
import type { Answer } from './http.js'
import type { Output } from './output.js'

/** What was sent and what was expected, next to what came back. */
export interface RequestRecord {
  label: string
  webhookId: string
  type?: string | undefined
  expected: string
  reason: string
  answer: Answer
}

/** The JSON shape of one request in `--json` output. */
export interface RequestJson {
  label: string
  webhookId: string
  type: string | null
  status: number | null
  code: string | null
  retryAfter: string | null
  duplicate: boolean
  /** Why a 2xx ran no handler (`"stale"`: the receiver's ordering skipped an older event of the email), else null. */
  skipped: string | null
  latencyMs: number
  failure: string | null
  expected: string
  ok: boolean
}

/**
 * Whether the receiver did what was expected.
 * @example
 * isRight({ ...record, expected: '401', answer: { status: 401, latencyMs: 3 } }) // true
 */
export function isRight(record: RequestRecord): boolean {
  return meets(record.answer.status, record.expected)
}

/**
 * The exit code of a run of single requests (send, replay): 0 when every answer was the expected
 * one, else 3 when any request got no answer at all, else 1.
 * @example
 * state.exitCode = exitCodeOf(records)
 */
export function exitCodeOf(records: readonly RequestRecord[]): number {
  if (records.every(isRight)) return EXIT.ok
  return records.some((record) => record.answer.status === undefined) ? EXIT.unreachable : EXIT.unexpected
}

/**
 * The JSON form of a request's outcome.
 * @example
 * out.data({ requests: records.map(toJson) })
 */
export function toJson(record: RequestRecord): RequestJson {
  const { answer } = record
  return {
    label: record.label,
    webhookId: record.webhookId,
    type: record.type ?? null,
    status: answer.status ?? null,
    code: answer.code ?? null,
    retryAfter: answer.retryAfter ?? null,
    duplicate: answer.duplicate === true,
    skipped: answer.skipped ?? null,
    latencyMs: Math.round(answer.latencyMs * 10) / 10,
    failure: answer.failure ?? null,
    expected: record.expected,
    ok: isRight(record),
  }
}

/** What a `skipped` answer means, after the verdict. */
function skippedNote(answer: Answer): string {
  if (answer.skipped === undefined) return ''
  if (answer.skipped === 'stale') {
    return ' (acknowledged without running a handler: the receiver orders events and already handled a newer event of this email)'
  }
  return ` (acknowledged without running a handler: skipped ${answer.skipped})`
}

/**
 * One readable line: mark, status, error code, Retry-After, duplicate or skipped, latency, event, and the verdict.
 * @example
 * out.line(formatLine(record, out.colors))
 */
export function formatLine(record: RequestRecord, colors: Output['colors']): string {
  const { answer } = record
  const right = isRight(record)
  const mark = right ? colors.green('✓') : colors.red('✗')
  const status =
    answer.status === undefined
      ? colors.red(`no answer (${answer.failure ?? 'unknown'})`)
      : colors.bold(String(answer.status)) + (answer.code ? ` ${colors.yellow(answer.code)}` : '')
  const parts = [
    `${mark} ${record.label.padEnd(12)} ${status}`,
    ...(answer.retryAfter === undefined ? [] : [`retry-after ${answer.retryAfter}`]),
    ...(answer.duplicate ? ['duplicate'] : []),
    ...(answer.skipped === undefined ? [] : [colors.yellow(`skipped: ${answer.skipped}`)]),
    `${answer.latencyMs.toFixed(1)} ms`,
    colors.dim(`${record.type ?? '(no type)'} ${record.webhookId}`),
  ]
  const verdict = right
    ? `right: ${record.reason}${skippedNote(answer)}`
    : answer.status === 409 && record.expected === '2xx'
      ? 'not 2xx, so the sender retries it: 409 says another copy of this event is still being handled'
      : `WRONG, expected ${record.expected}: ${record.reason}`
  return [...parts, right ? colors.green(verdict) : colors.red(verdict)].join('  ')
}
