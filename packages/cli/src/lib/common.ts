/** Options and plumbing shared by the commands: secret sources, --json, the exit code of a run. */
import { type Command, Option } from 'commander'

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
