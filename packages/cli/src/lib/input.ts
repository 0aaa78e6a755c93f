/** Reading bodies and files given on the command line: a path, or `-` for stdin. */
import { readFile } from 'node:fs/promises'
import { InvalidArgumentError } from 'commander'
import { UsageError } from './errors.js'

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/**
 * Reads a file's exact bytes, or stdin when the path is `-`.
 * @param path A file path or `-`.
 * @param what What the file is, for the error message (e.g. 'body file').
 * @throws {UsageError} when the file cannot be read.
 * @example
 * const body = await readInput('event.json', 'body file')
 */
export async function readInput(path: string, what: string): Promise<Uint8Array> {
  if (path === '-') {
    if (process.stdin.isTTY) throw new UsageError(`Give the ${what} as a path, or pipe it on stdin.`)
    return readStdin()
  }
  try {
    return new Uint8Array(await readFile(path))
  } catch (error) {
    throw new UsageError(`Cannot read the ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? 'unknown error'}.`)
  }
}

/**
 * A commander argParser for a whole-number option within bounds.
 * @param min The smallest value accepted.
 * @param max The largest value accepted.
 * @returns The parser; it throws InvalidArgumentError (usage error, exit 2) with the bounds.
 * @example
 * new Option('--timeout <ms>').argParser(wholeNumber(1, 600_000))
 */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    const number = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < min || number > max) {
      throw new InvalidArgumentError(`Give a whole number from ${min} to ${max}.`)
    }
    return number
  }
}

/**
 * A commander argParser for a decimal option within bounds (`0.5`, `2`, `1e-2` is refused).
 * @param min The smallest value accepted.
 * @param max The largest value accepted.
 * @returns The parser; it throws InvalidArgumentError (usage error, exit 2) with the bounds.
 * @example
 * new Option('--rate <n>').argParser(decimalNumber(0.01, 100))
 */
export function decimalNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    const number = Number(value)
    if (!/^\d+(\.\d+)?$/.test(value) || number < min || number > max) {
      throw new InvalidArgumentError(`Give a number from ${min} to ${max} (such as 0.5 or 2).`)
    }
    return number
  }
}

/** What {@link describeBody} finds in a body. */
export interface BodyFacts {
  /** The parsed JSON object, when the body is one. */
  value?: Record<string, unknown>
  /** Its `id`, when a string. */
  id?: string
  /** Its `type`, when a string. */
  type?: string
}

const decoder = new TextDecoder()

/**
 * The id and type inside a body, when it is a JSON object that has them (nothing otherwise, never throws).
 * @param body The body's text or exact bytes (decoded as UTF-8).
 * @example
 * describeBody('{"id":"evt_1","type":"email.bounced"}') // { value: {…}, id: 'evt_1', type: 'email.bounced' }
 */
export function describeBody(body: string | Uint8Array): BodyFacts {
  try {
    const value = JSON.parse(typeof body === 'string' ? body : decoder.decode(body)) as unknown
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {}
    const record = value as Record<string, unknown>
    return {
      value: record,
      ...(typeof record.id === 'string' ? { id: record.id } : {}),
      ...(typeof record.type === 'string' ? { type: record.type } : {}),
    }
  } catch {
    return {}
  }
}
