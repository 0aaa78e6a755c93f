/**
 * `emails reconcile <receiver-url>`: brings a receiver every event it missed, from each email's
 * own event list (`GET /emails/{id}`), through core's reconcileEmails(): events emitted while the
 * endpoint was disabled, past the 100-record delivery list, or whose payload expired. The receiver
 * answers what it already handled as a duplicate (it needs `ordering: true`). The API key and the
 * secret are never printed.
 */
import { EMAILS_SCOPE, ReconcileAbortedError, type ReconcileReport, reconcileEmails } from '@email-webhooks/core/api'
import { Command, Option } from 'commander'
import { type ApiOptions, apiOptions, clientFor } from '../lib/api-client.js'
import { type CommandFactory, examples, type RunState, withSecretOptions } from '../lib/common.js'
import { EXIT } from '../lib/errors.js'
import { checkUrl, DEFAULT_TIMEOUT_MS, displayUrl } from '../lib/http.js'
import { wholeNumber } from '../lib/input.js'
import { createOutput } from '../lib/output.js'
import { parseDuration, parseSince, readEmailIds } from '../lib/reconcile-input.js'
import { printReconcile, progressBar, reconcileExitCode } from '../lib/reconcile-output.js'
import { resolveSecret } from '../lib/secret.js'

/** The receiver's default retention (core's DEFAULT_RETENTION_MS), as `--retention` takes it. */
const DEFAULT_RETENTION = '7d'

interface ReconcileOptions extends ApiOptions {
  ids: string
  secret?: string
  envFile?: string
  dryRun?: boolean
  /** Epoch ms. */
  since?: number
  /** Milliseconds. */
  retention: number
  concurrency: number
  timeout: number
}

async function reconcile(state: RunState, receiverUrl: string, o: ReconcileOptions): Promise<void> {
  const out = createOutput(o.json === true)
  checkUrl(receiverUrl)
  const { concurrency, timeout: timeoutMs, retention: retentionMs, since } = o
  // A dry run signs nothing: no secret needed.
  const secret = o.dryRun ? undefined : resolveSecret(o)
  const { client, keySource } = clientFor(o, EMAILS_SCOPE)
  const emailIds = await readEmailIds(o.ids)
  out.line(
    out.colors.dim(
      `${o.dryRun ? 'Dry run: ' : ''}${emailIds.length} email ids → ${displayUrl(receiverUrl)} (key from ${keySource}${secret ? `, secret from ${secret.source}` : ''})`,
    ),
  )
  const bar = progressBar(out, emailIds.length)
  const abort = new AbortController()
  const onSigint = (): void => abort.abort(new Error('interrupted (SIGINT)'))
  process.once('SIGINT', onSigint)
  let report: ReconcileReport
  try {
    report = await reconcileEmails({
      client,
      emailIds,
      receiverUrl,
      secret: secret?.value,
      dryRun: o.dryRun === true,
      retentionMs,
      since,
      concurrency,
      timeoutMs,
      signal: abort.signal,
      onEmail: (email, progress) => bar?.update(progress.done, email),
    })
  } catch (error) {
    if (!(error instanceof ReconcileAbortedError)) throw error
    bar?.stop()
    printReconcile(out, error.report)
    out.error('email-webhooks: interrupted; run reconcile again to finish (what the receiver already handled is answered as a duplicate).')
    state.exitCode = EXIT.interrupted
    return
  } finally {
    process.removeListener('SIGINT', onSigint)
    bar?.stop()
  }
  printReconcile(out, report)
  state.exitCode = reconcileExitCode(report)
}

function reconcileCommand(state: RunState): Command {
  const command = new Command('reconcile')
    .description(
      "send the receiver each event of the emails' own event lists (GET /emails/{id}) it has not handled: those emitted while the endpoint was disabled, past the 100-record delivery list, or whose payload expired",
    )
    .argument('<receiver-url>', 'where the sender delivers, e.g. https://example.com/hooks')
    .requiredOption('--ids <file>', 'the email ids, one per line (the ids POST /emails returned); - reads stdin')
    .option('--dry-run', 'read the emails and list what would be sent, per email, and why; send nothing')
    .addOption(
      new Option(
        '--since <time>',
        'skip emails created before this: 2026-11-20T08:00:00Z, 2026-11-20 (UTC) or an age such as 48h',
      ).argParser((value: string) => parseSince(value)),
    )
    .addOption(
      new Option('--retention <duration>', "the receiver's retentionMs: older events are not sent (it cannot recognise them)")
        .argParser(parseDuration)
        .default(parseDuration(DEFAULT_RETENTION), DEFAULT_RETENTION),
    )
    .addOption(
      new Option('--concurrency <n>', 'emails at once (1–32); the events of one email go one at a time')
        .argParser(wholeNumber(1, 32))
        .default(4),
    )
    .addOption(
      new Option('--timeout <ms>', 'per-request timeout to the receiver in ms')
        .argParser(wholeNumber(1, 600_000))
        .default(DEFAULT_TIMEOUT_MS),
    )
  withSecretOptions(command)
  return apiOptions(command, EMAILS_SCOPE).action((url: string, o: ReconcileOptions) => reconcile(state, url, o))
}

/**
 * Builds the `emails` command and its subcommand `reconcile`.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(emailsCommand(state))
 */
export const emailsCommand: CommandFactory = (state) => {
  const command = new Command('emails').description("the emails' own event lists: reconcile a receiver from them")
  command.addHelpText(
    'after',
    examples([
      'export EMAIL_API_KEY=… EMAIL_API_URL=https://…/v1 EMAIL_WEBHOOK_SECRET=…',
      'email-webhooks emails reconcile https://example.com/hooks --ids ids.txt --dry-run',
      'email-webhooks emails reconcile https://example.com/hooks --ids ids.txt --since 48h',
      'psql -Atc "select email_id from outbox" | email-webhooks emails reconcile https://example.com/hooks --ids - --json',
    ]),
  )
  command.addCommand(reconcileCommand(state))
  return command
}
