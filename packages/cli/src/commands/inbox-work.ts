/**
 * `inbox work --handlers <module>`: the inbox worker in a process of its own, built by core's
 * createInboxWorker from the user's handlers module and the receiver's store, as the receiver
 * builds its own. `--once` handles what is due and exits (cron, tests); without it the worker runs
 * until SIGINT or SIGTERM, then stops taking entries and waits for the running ones to finish (a
 * second signal exits at once and lets their leases lapse). One line per dead letter on stderr; a
 * summary at the end.
 */
import { createInboxWorker, DEFAULT_NAMESPACE, type InboxQueue, type InboxWorkerHandle } from '@email-webhooks/core'
import { Command, Option } from 'commander'
import type { RunState } from '../lib/common.js'
import { EXIT, plainMessage, UsageError } from '../lib/errors.js'
import { type HandlersModule, loadHandlersModule } from '../lib/handlers-module.js'
import { type InboxOptions, inboxOptions, withInbox } from '../lib/inbox-command.js'
import { statsJson } from '../lib/inbox-output.js'
import type { InboxStore } from '../lib/inbox-store.js'
import { wholeNumber } from '../lib/input.js'
import { createOutput, type Output } from '../lib/output.js'
import { WorkSignals } from '../lib/work-signals.js'

/** How long the process may linger once everything is closed before it is ended (the module kept a connection open). */
const LINGER_MS = 5_000

interface WorkOptions extends InboxOptions {
  handlers: string
  concurrency?: number
  once?: boolean
  namespace?: string
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

function namespaceOf(flag: string | undefined, fromModule: unknown): string {
  if (flag !== undefined && fromModule !== undefined && flag !== fromModule)
    throw new UsageError(
      `--namespace "${flag}" differs from the handlers module's options.namespace "${String(fromModule)}": give the receiver's, once.`,
    )
  return flag ?? (typeof fromModule === 'string' ? fromModule : DEFAULT_NAMESPACE)
}

/** Refuses to start when pending entries were recorded under another namespace: this worker would give them up as dead. */
async function checkNamespace(inbox: InboxQueue, namespace: string): Promise<void> {
  const others = new Set<string>()
  for (const { key } of await inbox.list({ state: 'pending', limit: 200 })) {
    if (!key.startsWith(`${namespace}:`)) others.add(key.includes(':') ? key.slice(0, key.indexOf(':')) : key)
  }
  if (others.size === 0) return
  throw new UsageError(
    `The inbox holds pending entries of namespace ${[...others].map((n) => `"${n}"`).join(', ')}, and this worker's namespace is "${namespace}": pass the receiver's namespace with --namespace (or options.namespace in the handlers module). A worker of another namespace would give those entries up as dead.`,
  )
}

function build(mod: HandlersModule, o: WorkOptions, opened: InboxStore, namespace: string, out: Output): InboxWorkerHandle {
  const { concurrency } = o
  const { onDeadLetter } = mod.options
  try {
    return createInboxWorker({
      ...mod.options,
      handlers: mod.handlers,
      store: opened.store,
      namespace,
      inbox: { ...mod.options.inbox, ...(concurrency === undefined ? {} : { concurrency }) },
      onDeadLetter: (letter) => {
        try {
          onDeadLetter?.(letter)
        } finally {
          out.error(
            `dead: ${letter.type} ${letter.eventId} after ${plural(letter.attempts, 'attempt', 'attempts')} (last error: ${letter.error}); fix the cause, then \`email-webhooks inbox retry ${letter.eventId}\` (or --dead).`,
          )
        }
      },
    })
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(`The handlers module ${o.handlers}: ${plainMessage(error)}`)
    throw error
  }
}

async function summary(out: Output, worker: InboxWorkerHandle, stoppedBy: string, store: string): Promise<void> {
  const counts = worker.counts()
  const stats = await worker.queue.stats()
  // `store` as every other inbox command's --json says it.
  if (out.json) return out.data({ store, stoppedBy, ...counts, inbox: statsJson(stats, Date.now()) })
  const head = stoppedBy === 'drained' ? 'Done (--once: nothing more is due)' : `Stopped (${stoppedBy})`
  out.line(
    `${head}: ${counts.handled} handled, ${plural(counts.duplicate, 'duplicate', 'duplicates')}, ${plural(counts.retry, 'failed attempt', 'failed attempts')} to retry, ${counts.dead} dead, ${counts.deferred} deferred (held elsewhere). Inbox now: ${stats.pending} pending, ${stats.running} running, ${stats.dead} dead.`,
  )
}

/** Once everything of ours is closed, a connection the module keeps open would keep the process alive: end it, saying why. */
function exitIfLingering(code: () => number): void {
  setTimeout(() => {
    process.stderr.write(
      `email-webhooks: still running ${LINGER_MS / 1000} s after the command ended: the handlers module keeps something open (a database pool?). Export close() from it to end it; exiting now.\n`,
    )
    process.exit(code())
  }, LINGER_MS).unref()
}

async function work(state: RunState, o: WorkOptions): Promise<void> {
  const mod = await loadHandlersModule(o.handlers)
  let usageCode: number | undefined
  /** The store worked on, for a summary a signal prints (known once it is open). */
  let store = ''
  const signals = new WorkSignals(createOutput(o.json === true), (worker, stoppedBy) =>
    summary(createOutput(o.json === true), worker, stoppedBy, store),
  )
  try {
    const namespace = namespaceOf(o.namespace, mod.options.namespace)
    await withInbox(
      state,
      o,
      async (opened, out) => {
        await checkNamespace(opened.inbox, namespace)
        store = opened.description
        const worker = build(mod, o, opened, namespace, out)
        if (mod.ignoredStore) out.error(`note: the handlers module's options.store is not used; the worker uses the ${opened.description}.`)
        const { concurrency, maxAttempts } = worker.settings
        const what = o.once ? 'Handling what is due in' : 'Working'
        const types = mod.types.length > 0 ? mod.types.join(', ') : 'onEvent/onUnknown'
        out.line(
          `${what} the inbox of ${opened.description}: namespace "${namespace}", concurrency ${concurrency}, up to ${maxAttempts} attempts, handlers for ${types} from ${o.handlers}${o.once ? '; then exiting' : '; SIGINT (Ctrl-C) or SIGTERM stops it'}.`,
        )
        const stoppedBy = await signals.run(worker, o.once === true)
        if (stoppedBy !== 'drained') out.error(`${stoppedBy}: no entry is running any more; stopped.`)
        await summary(out, worker, stoppedBy, opened.description)
        if (o.once && worker.counts().dead > 0) state.exitCode = EXIT.unexpected
      },
      false,
    )
  } catch (error) {
    if (error instanceof UsageError) usageCode = error.exitCode
    throw error
  } finally {
    await mod.close?.()
    signals.dispose()
    exitIfLingering(() => usageCode ?? state.exitCode)
  }
}

/**
 * Builds `inbox work`.
 * @param state Where the command leaves its exit code.
 * @example
 * inbox.addCommand(workCommand(state))
 */
export function workCommand(state: RunState): Command {
  const command = new Command('work')
    .description(
      "run the inbox worker in this process: take due entries and run your handlers, as the receiver's worker does (give the receiver inbox: { worker: false })",
    )
    .requiredOption(
      '--handlers <module>',
      "your module (ESM or CommonJS, path relative to the working folder) exporting handlers, and optionally options (the receiver's: namespace, ordering, onError, inbox: { maxAttempts, retryBaseMs, handlerTimeoutMs, … }) and close()",
    )
    .addOption(
      new Option('--concurrency <n>', 'entries handled at once, 1–256 (default options.inbox.concurrency, else 4)').argParser(
        wholeNumber(1, 256),
      ),
    )
    .option('--once', 'handle what is due now, then exit (cron, tests); exit 1 when an entry became dead')
    .option('--namespace <ns>', `the receiver's namespace (default options.namespace, else "${DEFAULT_NAMESPACE}")`)
  return inboxOptions(command).action((o: WorkOptions) => work(state, o))
}
