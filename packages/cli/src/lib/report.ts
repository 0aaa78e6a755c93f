/** One readable line per request (and the receiver's message under a wrong one), and the JSON record of the same facts. */

import { createColors } from 'picocolors'
import { EXIT } from './errors.js'
import { meets } from './expect.js'
import type { Answer } from './http.js'
import { type Output, visibleWidth } from './output.js'

/** What was sent and what was expected, next to what came back. */
export interface RequestRecord {
  label: string
  webhookId: string
  type?: string | undefined
  expected: string
  /** Why a correct receiver answers as it does (the natural expectation's reason). */
  reason: string
  /** What a correct receiver answers when `--expect` replaced it (`expected` is then `--expect`'s). */
  natural?: string | undefined
  answer: Answer
}

/** The JSON shape of one request in `--json` output. */
export interface RequestJson {
  label: string
  webhookId: string
  type: string | null
  status: number | null
  code: string | null
  /** The receiver's error message (`{ error: { message } }`, one line), else null. */
  message: string | null
  retryAfter: string | null
  duplicate: boolean
  /** True when the receiver said `{ "queued": true }` (inbox mode: recorded, its handler runs after the answer). */
  queued: boolean
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
    message: answer.message ?? null,
    retryAfter: answer.retryAfter ?? null,
    duplicate: answer.duplicate === true,
    queued: answer.queued === true,
    skipped: answer.skipped ?? null,
    latencyMs: Math.round(answer.latencyMs * 10) / 10,
    failure: answer.failure ?? null,
    expected: record.expected,
    ok: isRight(record),
  }
}

/** What a `skipped` or `queued` answer means, after the verdict. */
function skippedNote(answer: Answer): string {
  if (answer.queued === true && answer.duplicate !== true)
    return ' (queued: the receiver is in inbox mode and recorded it; its handler runs after the answer, so a failure there shows in its log or `email-webhooks inbox list`, not here)'
  if (answer.skipped === undefined) return ''
  if (answer.skipped === 'stale') {
    return ' (acknowledged without running a handler: the receiver orders events and already handled a newer event of this email)'
  }
  return ` (acknowledged without running a handler: skipped ${answer.skipped})`
}

/** Column widths shared by the lines of one run, so that they line up ({@link lineWidths}). */
export interface LineWidths {
  label: number
  status: number
  notes: number
  latency: number
}

/** The narrowest label column: the line of a single `send` keeps its familiar shape. */
const MIN_LABEL_WIDTH = 11

function statusCell(answer: Answer, colors: Output['colors']): string {
  if (answer.status === undefined) return colors.red(`no answer (${answer.failure ?? 'unknown'})`)
  return colors.bold(String(answer.status)) + (answer.code ? ` ${colors.yellow(answer.code)}` : '')
}

function notesCell(answer: Answer, colors: Output['colors']): string {
  return [
    ...(answer.retryAfter === undefined ? [] : [`retry-after ${answer.retryAfter}`]),
    ...(answer.duplicate ? ['duplicate'] : []),
    ...(answer.queued && !answer.duplicate ? ['queued'] : []),
    ...(answer.skipped === undefined ? [] : [colors.yellow(`skipped: ${answer.skipped}`)]),
  ].join('  ')
}

const latencyCell = (answer: Answer): string => answer.latencyMs.toFixed(1)

/**
 * The widths that make the lines of these records line up: label, status and code, notes
 * (retry-after, duplicate, queued, skipped) and latency, measured without colours.
 * @example
 * const widths = lineWidths(records)
 * for (const record of records) out.line(formatLine(record, out.colors, widths))
 */
export function lineWidths(records: readonly RequestRecord[]): LineWidths {
  const max = (cells: string[]): number => Math.max(0, ...cells.map((cell) => visibleWidth(cell)))
  const plain = createColors(false)
  return {
    label: Math.max(MIN_LABEL_WIDTH, max(records.map((r) => r.label))),
    status: max(records.map((r) => statusCell(r.answer, plain))),
    notes: max(records.map((r) => notesCell(r.answer, plain))),
    latency: max(records.map((r) => latencyCell(r.answer))),
  }
}

const pad = (cell: string, width: number): string => cell + ' '.repeat(Math.max(0, width - visibleWidth(cell)))

/** The verdict: right or WRONG, and why; with `--expect`, what was asked and what a correct receiver answers without it. */
function verdictText(record: RequestRecord, right: boolean): string {
  const { answer } = record
  if (record.natural !== undefined) {
    const without = `without --expect, a correct receiver answers ${record.natural} (${record.reason})`
    return right
      ? `right: ${answer.status} is ${record.expected}, as --expect asked; ${without}${skippedNote(answer)}`
      : `WRONG, expected ${record.expected} (--expect); ${without}`
  }
  if (right) return `right: ${record.reason}${skippedNote(answer)}`
  if (answer.status === 409 && record.expected === '2xx')
    return 'not 2xx, so the sender retries it: 409 says another copy of this event is still being handled'
  return `WRONG, expected ${record.expected}: ${record.reason}`
}

/**
 * One readable line: mark, label, status and error code, Retry-After, duplicate, queued or
 * skipped, latency, event, and the verdict; under a wrong one, the receiver's error message (what
 * to fix is often there). Given the {@link lineWidths} of a run, its columns line up with the other
 * lines of that run whatever the colours; else they are as wide as this line needs.
 * @example
 * out.line(formatLine(record, out.colors, lineWidths(records)))
 */
export function formatLine(record: RequestRecord, colors: Output['colors'], widths: LineWidths = lineWidths([record])): string {
  const { answer } = record
  const right = isRight(record)
  const mark = right ? colors.green('✓') : colors.red('✗')
  const notes = notesCell(answer, colors)
  const parts = [
    `${mark} ${pad(record.label, widths.label)}`,
    pad(statusCell(answer, colors), widths.status),
    ...(widths.notes > 0 ? [pad(notes, widths.notes)] : []),
    `${latencyCell(answer).padStart(widths.latency)} ms`,
    colors.dim(`${record.type ?? '(no type)'} ${record.webhookId}`),
  ]
  const verdict = verdictText(record, right)
  const line = [...parts, right ? colors.green(verdict) : colors.red(verdict)].join('  ')
  return right || answer.message === undefined ? line : `${line}\n  ${colors.dim('the receiver said:')} ${answer.message}`
}
