/**
 * The replay file: JSON lines, one recorded delivery per line. A line is either
 * `{ "body": <string: the exact raw body | object: sent as JSON>, "headers"?: { … } }` or a bare
 * event envelope `{ "id", "type", "created_at", "data" }` (sent as the line's own text).
 * The webhook-id is the recorded `webhook-id` header, else the body's `id`. Blank lines are skipped.
 */
import { UsageError } from './errors.js'
import { describeBody } from './input.js'

/** One delivery to re-send. */
export interface Recorded {
  /** 1-based line number in the file. */
  line: number
  webhookId: string
  type: string | undefined
  body: string
  contentType: string
}

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

function header(headers: unknown, name: string, line: number): string | undefined {
  if (headers === undefined) return undefined
  if (!isObject(headers)) throw new UsageError(`line ${line}: "headers" must be an object of header names to values.`)
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue
    const first = Array.isArray(value) ? value[0] : value
    if (typeof first !== 'string') throw new UsageError(`line ${line}: header "${key}" must be a string.`)
    return first
  }
  return undefined
}

function parseLine(text: string, line: number): Recorded {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new UsageError(`line ${line}: not valid JSON (each line holds one recorded delivery).`)
  }
  if (!isObject(value)) throw new UsageError(`line ${line}: expected a JSON object.`)
  let body: string
  let headers: unknown
  if ('body' in value) {
    headers = value.headers
    if (typeof value.body === 'string') body = value.body
    else if (isObject(value.body)) body = JSON.stringify(value.body)
    else throw new UsageError(`line ${line}: "body" must be the raw body (a string) or the event (an object).`)
  } else if (typeof value.id === 'string' && typeof value.type === 'string') {
    body = text
  } else {
    throw new UsageError(`line ${line}: expected { "body": …, "headers"?: … } or an event envelope with "id" and "type".`)
  }
  const event = describeBody(body)
  const webhookId = header(headers, 'webhook-id', line) ?? event.id
  if (webhookId === undefined) throw new UsageError(`line ${line}: no webhook-id header and no string "id" in the body.`)
  return {
    line,
    webhookId,
    type: event.type,
    body,
    contentType: header(headers, 'content-type', line) ?? 'application/json',
  }
}

/**
 * Parses a whole replay file before anything is sent, so a bad line sends nothing.
 * @param text The file's text.
 * @throws {UsageError} naming the first bad line.
 * @example
 * const deliveries = parseReplayFile(readFileSync('captured.jsonl', 'utf8'))
 */
export function parseReplayFile(text: string): Recorded[] {
  const out: Recorded[] = []
  for (const [index, raw] of text.split('\n').entries()) {
    const trimmed = raw.trim()
    if (trimmed !== '') out.push(parseLine(trimmed, index + 1))
  }
  if (out.length === 0) throw new UsageError('The replay file holds no deliveries.')
  return out
}
