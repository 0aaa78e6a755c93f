/** Where the CLI writes: colours only on a TTY and never with NO_COLOR, JSON for scripts, errors on stderr. */
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

/** True when colours may be used on this stream: a TTY, and NO_COLOR unset or empty. */
function colorsWanted(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  return stream.isTTY === true
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
      if (!json) process.stdout.write(`${text}\n`)
    },
    data(value) {
      if (json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
    },
    error(text) {
      process.stderr.write(`${text}\n`)
    },
    interactive: !json && process.stderr.isTTY === true,
  }
}
