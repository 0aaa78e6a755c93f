/**
 * The `email-webhooks` program: every command is registered here, one line each, and `run()`
 * turns a command line into an exit code (usage errors → 2, see EXIT).
 */
import { Command, CommanderError, type ErrorOptions } from 'commander'
import { version } from '../package.json'
import { consoleCommand } from './commands/console.js'
import { emailsCommand } from './commands/emails.js'
import { endpointCommand } from './commands/endpoint.js'
import { inboxCommand } from './commands/inbox.js'
import { replayCommand } from './commands/replay.js'
import { sendCommand } from './commands/send.js'
import { senderCommand } from './commands/sender.js'
import { signCommand } from './commands/sign.js'
import { verifyCommand } from './commands/verify.js'
import { endIfDiskStuck } from './lib/close-store.js'
import type { CommandFactory, RunState } from './lib/common.js'
import { EXIT, UsageError } from './lib/errors.js'
import { setColorFlag, withoutCredentials } from './lib/output.js'

/** Every command, in the order `--help` lists them. */
// biome-ignore format: one command per line, so that adding a command is a one-line change
const COMMANDS: readonly CommandFactory[] = [
  sendCommand,
  replayCommand,
  signCommand,
  verifyCommand,
  endpointCommand,
  emailsCommand,
  inboxCommand,
  consoleCommand,
  senderCommand,
]

/**
 * The full names of the subcommands a mistyped command may mean: those named `name` exactly
 * (`recover` → `endpoint recover`), else, for three letters or more, those whose name starts with it.
 * @param program The program.
 * @param name The unknown command.
 * @example
 * nestedCommands(program, 'recover') // { exact: true, names: ['endpoint recover'] }
 */
export function nestedCommands(program: Command, name: string): { exact: boolean; names: string[] } {
  const all = program.commands.flatMap((group) => group.commands.map((sub) => ({ group: group.name(), sub: sub.name() })))
  const exact = all.filter(({ sub }) => sub === name)
  const found = exact.length > 0 ? exact : name.length >= 3 ? all.filter(({ sub }) => sub.startsWith(name)) : []
  return { exact: exact.length > 0, names: found.map(({ group, sub }) => `${group} ${sub}`) }
}

/** The program: an unknown command that is a subcommand of a group gets its full name suggested. */
class Program extends Command {
  override error(message: string, errorOptions?: ErrorOptions): never {
    const unknown = errorOptions?.code === 'commander.unknownCommand' ? this.args[0] : undefined
    if (unknown === undefined) return super.error(message, errorOptions)
    const { exact, names } = nestedCommands(this, unknown)
    const suggested = message.includes('(Did you mean')
    // An exact subcommand beats commander's guess among the top-level names (`retry` is `inbox retry`, not `replay`).
    if (names.length === 0 || (suggested && !exact)) return super.error(message, errorOptions)
    const base = `error: unknown command '${unknown}'`
    return super.error(`${base}\n(Did you mean ${names.map((n) => `email-webhooks ${n}`).join(' or ')}?)`, errorOptions)
  }
}

/**
 * Builds the program with every command.
 * @param state Where the command that runs leaves its exit code.
 * @example
 * await createProgram({ exitCode: 0 }).parseAsync(['node', 'email-webhooks', 'send', url])
 */
export function createProgram(state: RunState): Command {
  const program = new Program('email-webhooks')
    .description(
      "Send signed test deliveries of the email service webhooks to a receiver, replay captured ones, sign and verify; manage the sender's endpoints, recover one and reconcile a receiver from the emails' event lists; operate an inbox-mode receiver's inbox; rehearse an outage and its recovery against a local sender.",
    )
    .version(version)
    .option('--no-color', 'never colour the output (also NO_COLOR=1; FORCE_COLOR=1 colours it when not a terminal)')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ showGlobalOptions: true })
    // Every run sets it, so a program built again in the same process does not inherit the last run's.
    .hook('preAction', () => setColorFlag(program.opts<{ color?: boolean }>().color))
  for (const make of COMMANDS) program.addCommand(make(state).copyInheritedSettings(program))
  return program
}

/**
 * Runs the CLI on a command line and returns the exit code; usage errors are printed to stderr.
 * @param argv The full argv (`process.argv`: node, script, arguments).
 * @example
 * process.exitCode = await run(process.argv)
 */
export async function run(argv: readonly string[]): Promise<number> {
  const state: RunState = { exitCode: EXIT.ok }
  // `email-webhooks sign … | head -3` closes stdout early: end quietly, as Unix tools do.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(state.exitCode)
    throw error
  })
  try {
    await createProgram(state).parseAsync(argv)
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage
    if (error instanceof UsageError) {
      process.stderr.write(`email-webhooks: ${withoutCredentials(error.message)}\n`)
      return error.exitCode
    }
    // Printed here if the process is to be ended below, where the bin would have printed it.
    endIfDiskStuck(error)
    throw error
  } finally {
    // A store's close gave up on a disk that stopped answering (close-store.ts): everything is printed; the stuck sync would keep the process alive.
    endIfDiskStuck()
  }
  return state.exitCode
}
