/**
 * Where the CLI writes: colours when stdout is a terminal (or FORCE_COLOR asks), never with
 * NO_COLOR or `--no-color`; JSON for scripts; errors on stderr; tables padded on visible width.
 */
import { stripVTControlCharacters } from 'node:util'
import { createColors } from 'picocolors'

/** The colour functions the CLI uses (all identity functions when colours are off). */
export type Colors = ReturnType<typeof createColors>

/** Streams and settings every command writes through. */
export interface Output {
  /** True when `--json` was given: one JSON document on stdout, nothing else there. */
  readonly json: boolean
  readonly colors: Colors
  /** Writes one line of text to stdout (skipped in JSON mode). */
  line(text: string): void
  /** Writes a JSON document to stdout (only in JSON mode). */
  data(value: unknown): void
  /** Writes a diagnostic line to stderr. */
  error(text: string): void
  /** True when stderr is an interactive terminal (progress bars go there). */
  readonly interactive: boolean
}

/** `scheme://user:password@` (or `scheme://user@`) in any text: the part to drop. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^/\s:@"'<>]+(?::[^/\s@"'<>]*)?@/gi

/**
 * `text` without the user and password of any URL in it: nothing the CLI prints, as text or JSON,
 * on stdout or stderr, carries credentials (a receiver URL with basic auth, a store URL).
 * @example
 * withoutCredentials('postgres://app:secret@db/app') // 'postgres://db/app'
 */
export function withoutCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, '$1')
}

/** `false` once the global `--no-color` was given for this run (set by the program before each command runs). */
let colorFlag: boolean | undefined

/**
 * Records the global `--no-color` of this run: `false` turns colours off whatever the environment says.
 * @param flag commander's value of `--no-color` (`false` when given, else `true` or undefined).
 * @example
 * program.hook('preAction', () => setColorFlag(program.opts().color))
 */
export function setColorFlag(flag: boolean | undefined): void {
  colorFlag = flag
}

/**
 * Whether colours may be used on this stream, strongest rule first: `--no-color` turns them off;
 * `FORCE_COLOR` decides when set (`0` or `false` off, anything else on, as Node reads it); a
 * non-empty `NO_COLOR` turns them off; else a terminal whose TERM is not `dumb` gets them.
 * @param stream The stream written to.
 * @param env The environment.
 * @param flag The `--no-color` value (`false` when given).
 * @example
 * colorsWanted(process.stdout, { FORCE_COLOR: '1' }, undefined) // true
 */
export function colorsWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv, flag: boolean | undefined = colorFlag): boolean {
  if (flag === false) return false
  const force = env.FORCE_COLOR
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false'
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  return stream.isTTY === true && env.TERM !== 'dumb'
}

/**
 * Builds the output of one command run.
 * @param json Whether `--json` was given.
 * @example
 * const out = createOutput(options.json === true)
 * out.line(out.colors.green('ok'))
 */
export function createOutput(json: boolean): Output {
  const colors = createColors(!json && colorsWanted(process.stdout, process.env))
  return {
    json,
    colors,
    line(text) {
      if (!json) process.stdout.write(`${withoutCredentials(text)}\n`)
    },
    data(value) {
      if (json) process.stdout.write(`${withoutCredentials(JSON.stringify(value, null, 2))}\n`)
    },
    error(text) {
      process.stderr.write(`${withoutCredentials(text)}\n`)
    },
    interactive: !json && process.stderr.isTTY === true,
  }
}

/**
 * The width a text takes on a terminal: without colour codes (and other escape sequences).
 * @example
 * visibleWidth('\u001b[31mno\u001b[39m') // 2
 */
export function visibleWidth(text: string): number {
  return stripVTControlCharacters(text).length
}

/**
 * Prints rows under a bold header, columns padded on their visible width (coloured cells line up).
 * @param out Where to print.
 * @param headers Column titles.
 * @param rows One array of cells per row.
 * @example
 * table(out, ['id', 'url'], endpoints.map((e) => [e.id, e.url]))
 */
export function table(out: Output, headers: string[], rows: string[][]): void {
  const widths = headers.map((h, c) => Math.max(visibleWidth(h), ...rows.map((r) => visibleWidth(r[c] ?? ''))))
  const line = (cells: string[]): string =>
    cells
      .map((cell, c) => cell + ' '.repeat(Math.max(0, (widths[c] ?? 0) - visibleWidth(cell))))
      .join('  ')
      .trimEnd()
  out.line(out.colors.bold(line(headers)))
  for (const row of rows) out.line(line(row))
  if (rows.length === 0) out.line(out.colors.dim('(none)'))
}
