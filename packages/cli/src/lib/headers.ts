/**
 * Captured request headers for `verify`: `Name: value` lines (raw HTTP, `curl -D`, `--header`
 * flags) or a JSON object. A header given twice stays a list, so the verifier can refuse it.
 */
import { UsageError } from './errors.js'

/** Header names (lower case) to their value, or values when repeated. */
export type HeaderRecord = Record<string, string | string[]>

const START_LINE = /^(?:[A-Z]+ \S+ HTTP\/\d(?:\.\d)?|HTTP\/\d(?:\.\d)? \d{3}.*)$/

function add(record: HeaderRecord, name: string, value: string): void {
  const key = name.trim().toLowerCase()
  const existing = record[key]
  if (existing === undefined) record[key] = value
  else record[key] = Array.isArray(existing) ? [...existing, value] : [existing, value]
}

/**
 * Parses `Name: value` lines; a request or status line first is skipped, a blank line ends the headers.
 * @param lines The lines, e.g. the text of a headers file split on newlines.
 * @param where Where they come from, for error messages.
 * @param into Record to add to (for --header flags after a file).
 * @throws {UsageError} for a line that is not `Name: value`.
 * @example
 * parseHeaderLines(['webhook-id: 1f0c…'], '--header')
 */
export function parseHeaderLines(lines: readonly string[], where: string, into: HeaderRecord = {}): HeaderRecord {
  for (const [index, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, '')
    if (index === 0 && START_LINE.test(line)) continue
    if (line.trim() === '') {
      if (index === 0) continue
      break
    }
    const colon = line.indexOf(':')
    if (colon <= 0) throw new UsageError(`${where}, line ${index + 1}: expected "Name: value".`)
    add(into, line.slice(0, colon), line.slice(colon + 1).trim())
  }
  return into
}

/**
 * Parses a headers file: a JSON object of names to strings (or lists), or `Name: value` lines.
 * @param text The file's text.
 * @param where The file's name, for error messages.
 * @throws {UsageError} when it is neither.
 * @example
 * parseHeadersFile(readFileSync('headers.txt', 'utf8'), 'headers.txt')
 */
export function parseHeadersFile(text: string, where: string): HeaderRecord {
  const trimmed = text.trim()
  if (!trimmed.startsWith('{')) return parseHeaderLines(trimmed.split('\n'), where)
  let value: unknown
  try {
    value = JSON.parse(trimmed)
  } catch {
    throw new UsageError(`${where} starts with "{" but is not valid JSON; give a JSON object of headers or "Name: value" lines.`)
  }
  const record: HeaderRecord = {}
  for (const [name, item] of Object.entries(value as Record<string, unknown>)) {
    const items = Array.isArray(item) ? item : [item]
    for (const one of items) {
      if (typeof one !== 'string') throw new UsageError(`${where}: the value of header "${name}" must be a string.`)
      add(record, name, one)
    }
  }
  return record
}
