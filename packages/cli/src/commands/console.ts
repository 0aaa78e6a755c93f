/**
 * `console [--store <path|url>] [--port <n>] [--actions]`: the operator's console for a store, on
 * 127.0.0.1 only, signed in by a one-time link printed on stdout. Read-only unless `--actions`.
 * Runs until Ctrl-C (or SIGTERM), then closes the server and the store.
 */
import { DEFAULT_NAMESPACE } from '@email-webhooks/core'
import { Command } from 'commander'
import { closeStore } from '../lib/close-store.js'
import { type CommandFactory, examples, type RunState } from '../lib/common.js'
import { startConsoleServer } from '../lib/console-server.js'
import { EXIT, plainMessage } from '../lib/errors.js'
import { openInboxStore } from '../lib/inbox-store.js'
import { wholeNumber } from '../lib/input.js'
import { parseDuration } from '../lib/reconcile-input.js'
import { DB_ENV, DEFAULT_DB_PATH } from '../lib/recover-store.js'

interface ConsoleCommandOptions {
  store?: string
  port: number
  actions?: boolean
  namespace: string
  retention?: number
}

/** Waits for SIGINT or SIGTERM. */
function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve(signal)
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
}

/** The `console` command. */
export const consoleCommand: CommandFactory = (state: RunState) => {
  const command = new Command('console')
    .description(
      "serve the operator's console for the receiver's store on 127.0.0.1: find events, an email's story, dead letters (read-only unless --actions)",
    )
    .option(
      '--store <path|url>',
      `the receiver's store: its SQLite file (must exist), or a postgres://… or redis://… URL (default ${DB_ENV}, else ${DEFAULT_DB_PATH} when it exists)`,
    )
    .option('--port <n>', 'the port on 127.0.0.1 (default: any free one)', wholeNumber(0, 65_535), 0)
    .option('--actions', 'allow retrying and purging dead letters from the page')
    .option('--namespace <ns>', "the receiver's namespace option", DEFAULT_NAMESPACE)
    .option('--retention <duration>', "the receiver's retentionMs, to tell when events were handled (default 7d)", parseDuration)
    .addHelpText(
      'after',
      examples(['email-webhooks console --store ./.email-webhooks/dedup.db', 'email-webhooks console --store "$DATABASE_URL" --actions']),
    )
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
  return command.action(async (o: ConsoleCommandOptions) => {
    const opened = await openInboxStore(o.store)
    let server: Awaited<ReturnType<typeof startConsoleServer>>
    try {
      server = await startConsoleServer({
        store: opened.store,
        port: o.port,
        actions: o.actions === true,
        namespace: o.namespace,
        retentionMs: o.retention,
      })
    } catch (error) {
      process.stderr.write(`email-webhooks: the console could not start: ${plainMessage(error)}\n`)
      state.exitCode = EXIT.unexpected
      await closeStore(opened)
      return
    }
    process.stderr.write(
      `Console of ${opened.description}, ${o.actions ? 'actions on' : 'read-only'}. Open this link once (it signs this browser in, then stops working); Ctrl-C stops.\n`,
    )
    process.stdout.write(`${server.url}\n`)
    await untilStopped()
    await server.close()
    await closeStore(opened)
  })
}
