/**
 * `endpoint list | create <url> | enable <id> | disable <id> | deliveries <id> | recover <id>`:
 * the sender's webhook management API from the terminal, through core's typed client and
 * recoverEndpoint(). The API key is never printed; API errors are one line on stderr (a JSON
 * object with --json).
 */
import { DEFAULT_NAMESPACE, DedupStoreError } from '@email-webhooks/core'
import {
  checkEndpointUrl,
  EmailApiError,
  RecoveryAbortedError,
  recoverEndpoint,
  WEBHOOKS_SCOPE,
  type WebhooksClient,
} from '@email-webhooks/core/api'
import { Command, Option } from 'commander'
import { type ApiOptions, clientFor, apiOptions as withApiOptions } from '../lib/api-client.js'
import { type CommandFactory, ExplainedCommand, examples, type RunState } from '../lib/common.js'
import { EXIT, plainMessage } from '../lib/errors.js'
import { wholeNumber } from '../lib/input.js'
import { createOutput, type Output, table } from '../lib/output.js'
import { printAborted, printRecovery, recoveryExitCode } from '../lib/recover-output.js'
import { DB_ENV, DEFAULT_DB_PATH, openRecoveryStore } from '../lib/recover-store.js'

interface RecoverOptions extends ApiOptions {
  dryRun?: boolean
  db?: string
  store?: string
  namespace: string
  concurrency: number
  spacingMs: number
}

/**
 * Runs one API action; an EmailApiError becomes one line on stderr — text, or with --json the
 * error's JSON (`{ "error": { name, status, code, message, requestId?, fields?, keySource? } }`) —
 * and exit 1 (3 when the API was unreachable).
 */
async function guarded(
  state: RunState,
  options: ApiOptions,
  action: (client: WebhooksClient, out: Output) => Promise<void>,
): Promise<void> {
  const out = createOutput(options.json === true)
  const { client, keySource } = clientFor(options, WEBHOOKS_SCOPE)
  try {
    await action(client, out)
  } catch (error) {
    if (!(error instanceof EmailApiError)) throw error
    const keyRefused = error.status === 401 || error.status === 403
    if (out.json) out.error(JSON.stringify({ error: { ...error.toJSON(), ...(keyRefused ? { keySource } : {}) } }))
    else out.error(`email-webhooks: ${plainMessage(error)}${keyRefused ? ` (key from ${keySource})` : ''}`)
    state.exitCode = error.status === 0 ? EXIT.unreachable : EXIT.unexpected
  }
}

/** The sender's own URL rule (core's checkEndpointUrl), as a warning before the API is asked. */
function publicHttpsWarning(url: string): string | undefined {
  const problem = checkEndpointUrl(url, false)
  if (problem === null) return undefined
  return `warning: the service delivers only to public HTTPS URLs on port 443 and will likely refuse this one: ${problem.message}.`
}

function apiOptions(command: Command): Command {
  return withApiOptions(command, WEBHOOKS_SCOPE)
}

function listCommand(state: RunState): Command {
  return apiOptions(new Command('list').description('list the endpoints')).action((o: ApiOptions) =>
    guarded(state, o, async (client, out) => {
      const { endpoints } = await client.listEndpoints()
      if (out.json) return out.data(endpoints)
      const rows = endpoints.map((e) => [e.id, e.url, e.enabled ? 'yes' : out.colors.red('no'), String(e.failures), e.created_at])
      table(out, ['id', 'url', 'enabled', 'failures', 'created'], rows)
    }),
  )
}

function createCommand(state: RunState): Command {
  const command = new Command('create')
    .description('create an endpoint; its secret is printed once')
    .argument('<url>', 'public HTTPS URL on port 443')
  return apiOptions(command).action((url: string, o: ApiOptions) =>
    guarded(state, o, async (client, out) => {
      const warning = publicHttpsWarning(url)
      if (warning) out.error(warning)
      const created = await client.createEndpoint(url)
      if (out.json) return out.data(created)
      out.line(`Endpoint created: ${created.id}`)
      out.line(`Secret (shown only this once): ${created.secret}`)
      out.line(
        'Store it now where your receiver reads it (EMAIL_WEBHOOK_SECRET in your secret manager or a .env outside the repository); the service cannot show it again.',
      )
    }),
  )
}

function toggleCommand(state: RunState, enabled: boolean): Command {
  const name = enabled ? 'enable' : 'disable'
  const command = new Command(name)
    .description(`${name} an endpoint${enabled ? ' (also resets its failure counter)' : ''}`)
    .argument('<id>', 'endpoint id')
  return apiOptions(command).action((id: string, o: ApiOptions) =>
    guarded(state, o, async (client, out) => {
      const { requestId } = enabled ? await client.enableEndpoint(id) : await client.disableEndpoint(id)
      if (out.json) return out.data({ id, enabled, requestId })
      out.line(`Endpoint ${id} ${enabled ? 'enabled' : 'disabled'} (request id ${requestId}).`)
    }),
  )
}

function deliveriesCommand(state: RunState): Command {
  const command = new Command('deliveries')
    .description("list an endpoint's deliveries (the service shows at most 100)")
    .argument('<id>', 'endpoint id')
  return apiOptions(command).action((id: string, o: ApiOptions) =>
    guarded(state, o, async (client, out) => {
      const { deliveries } = await client.listDeliveries(id)
      if (out.json) return out.data(deliveries)
      const rows = deliveries.map((d) => [
        d.id,
        d.event_id,
        d.state,
        String(d.attempts),
        d.last_status === null ? '—' : String(d.last_status),
        d.next_attempt_at ?? '—',
      ])
      table(out, ['delivery', 'event', 'state', 'attempts', 'last status', 'next attempt'], rows)
    }),
  )
}

/** Runs recoverEndpoint with Ctrl-C connected: the first one stops it (report printed, exit 130). */
async function recover(state: RunState, client: WebhooksClient, out: Output, id: string, o: RecoverOptions): Promise<void> {
  const { concurrency, spacingMs } = o
  const source = await openRecoveryStore({ db: o.db, store: o.store })
  const abort = new AbortController()
  const onSigint = (): void => abort.abort(new Error('interrupted (SIGINT)'))
  process.once('SIGINT', onSigint)
  try {
    const options = { client, endpointId: id, store: source.store, namespace: o.namespace, dryRun: o.dryRun === true }
    const report = await recoverEndpoint({ ...options, concurrency, spacingMs, signal: abort.signal })
    printRecovery(out, report, source)
    state.exitCode = recoveryExitCode(report)
  } catch (error) {
    if (error instanceof RecoveryAbortedError) {
      printAborted(out, error, source, id)
      state.exitCode = EXIT.interrupted
    } else if (error instanceof DedupStoreError) {
      out.error(`email-webhooks: the dedup store (${source.description}) failed: ${plainMessage(error)}`)
      state.exitCode = error.code === 'connection_failed' ? EXIT.unreachable : EXIT.unexpected
    } else throw error
  } finally {
    process.removeListener('SIGINT', onSigint)
    await source.store?.close?.()
  }
}

function recoverCommand(state: RunState): Command {
  const command = new ExplainedCommand('recover')
    .description(
      're-enable the endpoint if disabled and retry, oldest first, every listed delivery whose event is neither delivered nor handled',
    )
    .argument('<id>', 'endpoint id')
    .option('--dry-run', 'show what would be done, change nothing')
    .option(
      '--db <path>',
      `the receiver's SQLite dedup file, opened read-only (must exist; default ${DB_ENV}, else ${DEFAULT_DB_PATH} when it exists)`,
    )
    .option('--store <url>', "the receiver's shared dedup store: postgres://… or redis://… (only looked up)")
    .option('--namespace <ns>', "the receiver's dedup namespace", DEFAULT_NAMESPACE)
    .addOption(new Option('--concurrency <n>', 'retries in flight at once (1–32)').argParser(wholeNumber(1, 32)).default(4))
    .addOption(new Option('--spacing-ms <ms>', 'gap between retry starts (0–60000)').argParser(wholeNumber(0, 60_000)).default(100))
    .conflict('db', ['store'], 'give --db (a SQLite file) or --store (a PostgreSQL or Redis URL), not both.')
  return apiOptions(command).action((id: string, o: RecoverOptions) =>
    guarded(state, o, (client, out) => recover(state, client, out, id, o)),
  )
}

/**
 * Builds the `endpoint` command and its subcommands.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(endpointCommand(state))
 */
export const endpointCommand: CommandFactory = (state) => {
  const command = new Command('endpoint').description(
    "manage the sender's webhook endpoints: list, create, enable, disable, deliveries, recover",
  )
  command.addHelpText(
    'after',
    examples([
      'export EMAIL_API_KEY=… EMAIL_API_URL=https://…/v1',
      'email-webhooks endpoint list',
      'email-webhooks endpoint create https://example.com/hooks   # prints the secret once',
      'email-webhooks endpoint deliveries <id> --json',
      'email-webhooks endpoint recover <id> --dry-run --db ./.email-webhooks/dedup.db',
      'email-webhooks endpoint recover <id> --store postgres://user:password@db.internal:5432/app',
    ]),
  )
  for (const sub of [
    listCommand(state),
    createCommand(state),
    toggleCommand(state, true),
    toggleCommand(state, false),
    deliveriesCommand(state),
    recoverCommand(state),
  ]) {
    command.addCommand(sub)
  }
  return command
}
