/**
 * `inbox list | show <id> | retry <id…>|--dead | purge --dead --older-than <d> | stats | work`:
 * the inbox of an inbox-mode receiver (`mode: 'inbox'`) from the terminal, through the store's
 * `InboxQueue` only, so any store with an inbox works alike. Payloads are never printed but by
 * `show --payload`.
 */
import type { InboxEntry, InboxQueue } from '@email-webhooks/core'
import { Command, Option } from 'commander'
import { type CommandFactory, examples, type RunState } from '../lib/common.js'
import { EXIT, UsageError } from '../lib/errors.js'
import { type InboxOptions, inboxOptions, withInbox, withNamespace } from '../lib/inbox-command.js'
import { entryJson, formatDuration, printEntries, printEntry, printStats, statsJson } from '../lib/inbox-output.js'
import { wholeNumber } from '../lib/input.js'
import { parseDuration } from '../lib/reconcile-input.js'
import { workCommand } from './inbox-work.js'

const STATES = ['pending', 'running', 'dead', 'done'] as const
const DEFAULT_LIMIT = 100

interface NamespaceOptions extends InboxOptions {
  namespace: string
}

/** The shortest start of an id taken as a prefix (an id's first 4 hex digits already tell most apart). */
const MIN_PREFIX = 4
/** Entries looked through per state for a prefix. */
const PREFIX_SCAN = 10_000

/**
 * The entry of a webhook-id (its key is `namespace:id`), of a whole key as `--json` shows it
 * (`other:id`), or of the unique entry whose id starts with `id` (at least 4 characters).
 * @throws {UsageError} when the prefix is the start of several entries' ids (they are named).
 */
async function find(inbox: InboxQueue, id: string, namespace: string): Promise<InboxEntry | undefined> {
  const exact = (await inbox.get(`${namespace}:${id}`)) ?? (id.includes(':') ? await inbox.get(id) : undefined)
  if (exact !== undefined || id.length < MIN_PREFIX || id.includes(':')) return exact
  const start = `${namespace}:${id.toLowerCase()}`
  const matches: InboxEntry[] = []
  for (const state of STATES) {
    for (const entry of await inbox.list({ state, limit: PREFIX_SCAN })) if (entry.key.toLowerCase().startsWith(start)) matches.push(entry)
  }
  if (matches.length <= 1) return matches[0]
  const ids = matches.slice(0, 5).map((entry) => entry.key.slice(namespace.length + 1))
  throw new UsageError(
    `${id} is the start of ${matches.length} entries' ids (${ids.join(', ')}${matches.length > 5 ? ', …' : ''}): give more of it, or the whole id.`,
  )
}

function listCommand(state: RunState): Command {
  const command = new Command('list')
    .description('list entries, oldest first: id, type, state, attempts, age, next attempt, last error (never the payload)')
    .addOption(new Option('--state <state>', 'only entries in this state').choices(STATES))
    .addOption(new Option('--limit <n>', 'at most this many entries (1–10000)').argParser(wholeNumber(1, 10_000)).default(DEFAULT_LIMIT))
  type ListOptions = NamespaceOptions & { state?: (typeof STATES)[number]; limit: number }
  return withNamespace(inboxOptions(command)).action((o: ListOptions) => {
    const { limit } = o
    return withInbox(state, o, async ({ inbox, description }, out) => {
      const entries = await inbox.list({ ...(o.state ? { state: o.state } : {}), limit })
      const now = Date.now()
      if (out.json) out.data({ store: description, entries: entries.map((e) => entryJson(e, o.namespace, false)) })
      else printEntries(out, entries, o.namespace, now)
      if (entries.length === limit) out.error(`(the first ${limit} entries, oldest first: --limit for more)`)
    })
  })
}

function showCommand(state: RunState): Command {
  const command = new Command('show')
    .description('one entry in full; its payload only with --payload')
    .argument('<id>', 'the webhook-id (as `inbox list` shows it), or its start when no other id starts so (4 characters or more)')
    .option('--payload', 'also print the payload, the event as received: it can hold recipient addresses (personal data)')
  return withNamespace(inboxOptions(command)).action((id: string, o: NamespaceOptions & { payload?: boolean }) =>
    withInbox(state, o, async ({ inbox, description }, out) => {
      const entry = await find(inbox, id, o.namespace)
      if (!entry) {
        out.error(
          `email-webhooks: no inbox entry ${id} (namespace "${o.namespace}"): it was never queued here, was purged, or was done and forgotten after the retention. \`email-webhooks inbox list\` shows the entries.`,
        )
        state.exitCode = EXIT.unexpected
        return
      }
      if (out.json) out.data({ store: description, ...entryJson(entry, o.namespace, o.payload === true) })
      else printEntry(out, entry, o.namespace, Date.now(), o.payload === true)
    }),
  )
}

function retryCommand(state: RunState): Command {
  const command = new Command('retry')
    .description('make dead entries pending again, attempts from zero: the given ones, or every one with --dead')
    .argument('[ids...]', 'webhook-ids of dead entries (or the start of one, when no other id starts so)')
    .option('--dead', 'every dead entry')
  return withNamespace(inboxOptions(command)).action((ids: string[], o: NamespaceOptions & { dead?: boolean }) => {
    if (o.dead && ids.length > 0) throw new UsageError('Give webhook-ids or --dead (every dead entry), not both.')
    if (!o.dead && ids.length === 0)
      throw new UsageError('Give the webhook-ids of dead entries (`inbox list --state dead`), or --dead for every one.')
    return withInbox(state, o, async ({ inbox, description }, out) => {
      const skipped: Array<{ id: string; state: string }> = []
      let retried: number
      if (o.dead) retried = await inbox.retry('dead')
      else {
        const keys: string[] = []
        for (const id of ids) {
          const entry = await find(inbox, id, o.namespace)
          if (entry?.state === 'dead') keys.push(entry.key)
          else skipped.push({ id, state: entry ? entry.state : 'not found' })
        }
        retried = keys.length === 0 ? 0 : await inbox.retry(keys)
      }
      if (out.json) out.data({ store: description, retried, skipped })
      else {
        out.line(
          `${retried} dead ${retried === 1 ? 'entry' : 'entries'} made pending: a worker takes ${retried === 1 ? 'it' : 'them'} now.`,
        )
        for (const s of skipped) out.line(`${s.id}: ${s.state === 'not found' ? 'no such entry' : `not dead (${s.state}), left as it is`}`)
      }
      if (skipped.some((s) => s.state === 'not found')) state.exitCode = EXIT.unexpected
    })
  })
}

function purgeCommand(state: RunState): Command {
  const command = new Command('purge')
    .description('delete dead entries that ended longer ago than --older-than (both options are required)')
    .option('--dead', 'delete dead entries (the only ones purge deletes)')
    .addOption(
      new Option('--older-than <duration>', 'only those that ended longer ago than this: 7d, 36h, 90m, 30s').argParser(parseDuration),
    )
  return inboxOptions(command).action((o: InboxOptions & { dead?: boolean; olderThan?: number }) => {
    const missing = [o.dead ? '' : '--dead', o.olderThan === undefined ? '--older-than <duration> (e.g. --older-than 7d)' : ''].filter(
      Boolean,
    )
    if (missing.length > 0)
      throw new UsageError(
        `purge deletes only dead entries that ended some time ago, and says so explicitly: add ${missing.join(' and ')}.`,
      )
    const olderThanMs = o.olderThan as number
    return withInbox(state, o, async ({ inbox, description }, out) => {
      const purged = await inbox.purge({ olderThanMs })
      if (out.json) out.data({ store: description, purged, olderThanMs })
      else out.line(`${purged} dead ${purged === 1 ? 'entry' : 'entries'} purged (ended more than ${formatDuration(olderThanMs)} ago).`)
    })
  })
}

function statsCommand(state: RunState): Command {
  const command = new Command('stats').description(
    'pending (the depth), running and dead entries, and the lag: how long the oldest pending entry has waited',
  )
  return inboxOptions(command).action((o: InboxOptions) =>
    withInbox(state, o, async ({ inbox, description }, out) => {
      const stats = await inbox.stats()
      if (out.json) out.data({ store: description, ...statsJson(stats, Date.now()) })
      else printStats(out, stats, Date.now())
    }),
  )
}

/**
 * Builds the `inbox` command and its subcommands.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(inboxCommand(state))
 */
export const inboxCommand: CommandFactory = (state) => {
  const command = new Command('inbox').description(
    "the inbox of an inbox-mode receiver (mode: 'inbox'): list, show, retry, purge, stats, and work it from a process of its own",
  )
  command.addHelpText(
    'after',
    examples([
      'email-webhooks inbox stats --store ./.email-webhooks/dedup.db',
      'email-webhooks inbox list --state dead --store ./.email-webhooks/dedup.db',
      'email-webhooks inbox show <id> --store ./.email-webhooks/dedup.db',
      'email-webhooks inbox retry --dead --store ./.email-webhooks/dedup.db',
      'email-webhooks inbox purge --dead --older-than 7d --store ./.email-webhooks/dedup.db',
      'email-webhooks inbox work --handlers ./handlers.js --store ./.email-webhooks/dedup.db',
    ]),
  )
  for (const sub of [
    listCommand(state),
    showCommand(state),
    retryCommand(state),
    purgeCommand(state),
    statsCommand(state),
    workCommand(state),
  ]) {
    command.addCommand(sub)
  }
  return command
}
