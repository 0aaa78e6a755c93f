/**
 * The `email-webhooks` program: every command is registered here, one line each, and `run()`
 * turns a command line into an exit code (usage errors → 2, see EXIT).
 */
import { Command, CommanderError } from 'commander'
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
 * Builds the program with every command.
 * @param state Where the command that runs leaves its exit code.
 * @example
 * await createProgram({ exitCode: 0 }).parseAsync(['node', 'email-webhooks', 'send', url])
 */
export function createProgram(state: RunState): Command {
  const program = new Command('email-webhooks')
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
    throw error
  }
  return state.exitCode
}
