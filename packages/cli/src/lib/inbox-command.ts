/**
 * What every `inbox` subcommand shares: `--store`, `--json` (and `--namespace` where ids are
 * shown or given), usage errors that reach `run()`, and a run with the store open: a store
 * failure is one line on stderr (exit 3 when it cannot be reached, else 1), and the store is
 * closed whatever happens (close-store.ts: a SQLite disk that stopped answering ends the process).
 */
import { DEFAULT_NAMESPACE, DedupStoreError } from '@email-webhooks/core'
import type { Command } from 'commander'
import { closeStore } from './close-store.js'
import type { RunState } from './common.js'
import { withJson } from './common.js'
import { EXIT, plainMessage } from './errors.js'
import { type InboxStore, openInboxStore } from './inbox-store.js'
import { createOutput, type Output } from './output.js'
import { DB_ENV, DEFAULT_DB_PATH } from './recover-store.js'

/** The options every inbox subcommand takes, as commander parses them. */
export interface InboxOptions {
  store?: string
  json?: boolean
}

/**
 * Adds `--store` and `--json`, and makes usage errors reach `run()` (subcommands do not inherit the program's settings).
 * @example
 * inboxOptions(new Command('stats'))
 */
export function inboxOptions(command: Command): Command {
  command
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .option(
      '--store <path|url>',
      `the receiver's store: its SQLite file (must exist), or a postgres://… or redis://… URL (default ${DB_ENV}, else ${DEFAULT_DB_PATH} when it exists)`,
    )
  return withJson(command)
}

/**
 * Adds `--namespace` (with the receiver's default), for subcommands that show or take webhook-ids.
 * @example
 * withNamespace(inboxOptions(new Command('list')))
 */
export function withNamespace(command: Command): Command {
  return command.option('--namespace <ns>', "the receiver's namespace option: ids are shown and taken without it", DEFAULT_NAMESPACE)
}

/**
 * The line that names the store a command reads, so that a user in the wrong folder sees which file it was.
 * @example
 * storeLine(opened) // 'Inbox of SQLite file /app/.email-webhooks/dedup.db (from --store).'
 */
export function storeLine(opened: Pick<InboxStore, 'description'>): string {
  return `Inbox of ${opened.description}.`
}

/**
 * Opens the store, runs `action`, and closes the store; a store failure becomes one line and an exit code.
 * Unless `announce` is false, the store is named first on stderr in text mode ({@link storeLine});
 * `--json` output carries it as `store` instead.
 * @param state Where the exit code goes.
 * @param options `--store` and `--json`.
 * @param action What the subcommand does with the store's inbox.
 * @param announce Whether to print the store line (`inbox work` names the store in its own first line).
 * @example
 * await withInbox(state, o, async ({ inbox }, out) => out.line(String((await inbox.stats()).dead)))
 */
export async function withInbox(
  state: RunState,
  options: InboxOptions,
  action: (opened: InboxStore, out: Output) => Promise<void>,
  announce = true,
): Promise<void> {
  const out = createOutput(options.json === true)
  const opened = await openInboxStore(options.store)
  if (announce && !out.json) out.error(storeLine(opened))
  try {
    await action(opened, out)
  } catch (error) {
    if (!(error instanceof DedupStoreError)) throw error
    out.error(`email-webhooks: the store (${opened.description}) failed: ${plainMessage(error)}`)
    state.exitCode = error.code === 'connection_failed' ? EXIT.unreachable : EXIT.unexpected
  } finally {
    await closeStore(opened)
  }
}
