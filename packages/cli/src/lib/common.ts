/** Options and plumbing shared by the commands: secret sources, --json, the exit code of a run, option conflicts with reasons. */
import { Command, type ErrorOptions, Option } from 'commander'

/** What a command reports back to `run()`. */
export interface RunState {
  /** The process exit code the command chose (see EXIT). */
  exitCode: number
}

/** A command factory, as listed once in program.ts. */
export type CommandFactory = (state: RunState) => Command

/**
 * Adds `--secret` and `--env-file` to a command.
 * @example
 * withSecretOptions(new Command('sign'))
 */
export function withSecretOptions(command: Command): Command {
  return command
    .addOption(new Option('-s, --secret <secret>', 'endpoint secret (prefer EMAIL_WEBHOOK_SECRET or a .env file: arguments show up in ps)'))
    .addOption(new Option('--env-file <path>', '.env file to read EMAIL_WEBHOOK_SECRET from (default ./.env)'))
}

/**
 * Adds `--json` to a command.
 * @example
 * withJson(new Command('verify'))
 */
export function withJson(command: Command): Command {
  return command.option('--json', 'print one JSON document on stdout, for scripts')
}

/**
 * Formats an examples block for `--help`.
 * @param lines Command lines, each optionally followed by `#` and a comment.
 * @example
 * command.addHelpText('after', examples(['email-webhooks sign event.json']))
 */
export function examples(lines: readonly string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`
}

/** Options that do not go together, and why (said after commander's "cannot be used with"). */
interface Conflict {
  option: string
  others: readonly string[]
  reason: string
}

/**
 * A command whose option conflicts (commander's `.conflicts()`) carry a reason: the usage error
 * says which two options clashed, as commander does, and then why and what to do.
 * @example
 * const command = new ExplainedCommand('send').option('--file <path>').option('--type <type>')
 * command.conflict('file', ['type'], '--file sends that body as it is: leave out --type.')
 */
export class ExplainedCommand extends Command {
  readonly #conflicts: Conflict[] = []

  /**
   * Declares that `option` cannot be used with `others` (attribute names, e.g. `emailId`), and why.
   * @throws {Error} when `option` is not defined yet (a programming error).
   */
  conflict(option: string, others: readonly string[], reason: string): this {
    const found = this.options.find((o) => o.attributeName() === option)
    if (!found) throw new Error(`conflict(): no option ${option} on ${this.name()}`)
    found.conflicts([...others])
    this.#conflicts.push({ option, others, reason })
    return this
  }

  override error(message: string, errorOptions?: ErrorOptions): never {
    if (errorOptions?.code !== 'commander.conflictingOption') return super.error(message, errorOptions)
    // As commander picks the pair: the first option given (in definition order) that conflicts with another one given.
    const given = new Set(
      this.options
        .map((o) => o.attributeName())
        .filter((name) => this.getOptionValue(name) !== undefined && this.getOptionValueSource(name) !== 'default'),
    )
    const first = this.options.find(
      (o) =>
        given.has(o.attributeName()) && this.#conflicts.some((c) => c.option === o.attributeName() && c.others.some((n) => given.has(n))),
    )
    const reason = this.#conflicts.find((c) => c.option === first?.attributeName() && c.others.some((n) => given.has(n)))?.reason
    return super.error(reason === undefined ? message : `${message}: ${reason}`, errorOptions)
  }
}
