/** `send <url>`: one signed delivery (or a spoiled one, or a lifecycle out of order), or a load with --count. */
import { EMAIL_EVENT_TYPES } from '@email-webhooks/core'
import { type Command, Option } from 'commander'
import { type CommandFactory, ExplainedCommand, examples, type RunState, withJson, withSecretOptions } from '../lib/common.js'
import { UsageError } from '../lib/errors.js'
import { parseCreatedAtOption } from '../lib/event-data.js'
import { expectationArg } from '../lib/expect.js'
import { checkUrl, DEFAULT_TIMEOUT_MS, displayUrl, post } from '../lib/http.js'
import { readInput, wholeNumber } from '../lib/input.js'
import { type LoadOptions, runLoad } from '../lib/load.js'
import { createOutput } from '../lib/output.js'
import { MODES, type Mode, planSend, SKEW_SECONDS } from '../lib/plan.js'
import { exitCodeOf, formatLine, isRight, lineWidths, type RequestRecord, toJson } from '../lib/report.js'
import { resolveSecret } from '../lib/secret.js'

const DEFAULT_TYPE = 'email.bounced'

interface SendOptions {
  type: string
  file?: string
  email?: string
  /** The older name of `--email`. */
  emailId?: string
  createdAt?: string
  secret?: string
  envFile?: string
  json?: boolean
  expect?: string
  timeout: number
  duplicate?: boolean
  oldTimestamp?: boolean
  /** The older name of `--old-timestamp`, hidden. */
  stale?: boolean
  future?: boolean
  tampered?: boolean
  wrongSecret?: boolean
  unknownType?: boolean
  outOfOrder?: boolean
  count?: number
  concurrency?: number
  duplicates?: number
  duration?: number
}

/** Attribute names of the mode options (`stale` is the hidden older name of `oldTimestamp`). */
const MODE_OPTIONS: readonly string[] = [...MODES, 'stale']

/** Printed on stderr when the hidden `--stale` is used. */
export const STALE_DEPRECATION =
  'email-webhooks: --stale is now --old-timestamp (a timestamp outside the ±300 s window; "stale" is what ordering calls an older event of an email). --stale will be removed in the next release.'

function modeOf(options: SendOptions): Mode {
  if (options.stale === true) {
    process.stderr.write(`${STALE_DEPRECATION}\n`)
    return 'oldTimestamp'
  }
  // The mode options conflict with each other (commander's .conflicts()), so at most one is set.
  return MODES.find((mode) => options[mode] === true) ?? 'plain'
}

async function sendOnce(url: string, options: SendOptions, mode: Mode, state: RunState): Promise<void> {
  const out = createOutput(options.json === true)
  const secret = resolveSecret(options)
  const body = options.file === undefined ? undefined : await readInput(options.file, 'body file')
  const emailId = options.email ?? options.emailId
  const planned = await planSend({
    mode,
    secret: secret.value,
    type: options.type,
    ...(body === undefined ? {} : { body }),
    ...(emailId === undefined ? {} : { emailId }),
    ...(options.createdAt === undefined ? {} : { createdAt: options.createdAt }),
    ...(options.expect === undefined ? {} : { expect: options.expect }),
  })
  out.line(out.colors.dim(`POST ${displayUrl(url)} (secret from ${secret.source})`))
  const records: RequestRecord[] = []
  for (const request of planned) {
    const answer = await post(url, request.delivery, { timeoutMs: options.timeout })
    records.push({ ...request, answer })
  }
  // Printed once every answer is in, so that the columns of all the lines line up.
  const widths = lineWidths(records)
  for (const record of records) out.line(formatLine(record, out.colors, widths))
  if (records.some(refusedSignature)) out.error(secretHint(secret.source))
  out.data({ ok: records.every(isRight), mode: modeName(mode), url: displayUrl(url), requests: records.map(toJson) })
  state.exitCode = exitCodeOf(records)
}

/** An authentic delivery (one expected to be acknowledged) refused for its signature: most often, not the receiver's secret. */
function refusedSignature(record: RequestRecord): boolean {
  return record.answer.status === 401 && record.answer.code === 'signature_mismatch' && !isRight(record)
}

/**
 * What to check after a refused signature, naming where the secret came from (never the secret).
 * @example
 * secretHint('EMAIL_WEBHOOK_SECRET') // 'hint: the receiver refused the signature (401 signature_mismatch): is the secret here (from EMAIL_WEBHOOK_SECRET) the receiver's? …'
 */
export function secretHint(source: string): string {
  return `hint: the receiver refused the signature (401 signature_mismatch): is the secret here (from ${source}) the receiver's? Give its EMAIL_WEBHOOK_SECRET with --secret, the environment or .env. If it is the same, something changes the body before the receiver verifies it (a JSON body parser or a proxy that re-encodes it): capture a refused request and run \`email-webhooks verify\` on it.`
}

/** The mode as the --json output names it: `send`, or the option without dashes in camel case (`oldTimestamp`). */
function modeName(mode: Mode): string {
  return mode === 'plain' ? 'send' : mode
}

function loadOptions(options: SendOptions, command: Command): LoadOptions {
  const emailId = options.email ?? options.emailId
  return {
    count: options.count as number,
    concurrency: options.concurrency ?? 10,
    duplicatePercent: options.duplicates ?? 0,
    durationSeconds: options.duration ?? 60,
    timeoutMs: options.timeout,
    type: options.type,
    typeGiven: command.getOptionValueSource('type') === 'cli',
    ...(emailId === undefined ? {} : { emailId }),
    ...(options.createdAt === undefined ? {} : { createdAt: options.createdAt }),
    ...(options.expect === undefined ? {} : { expect: options.expect }),
  }
}

/** The options of `send`, with their parsers. */
function withSendOptions(command: ExplainedCommand): ExplainedCommand {
  return command
    .description('POST signed test deliveries to a receiver and say whether it answered as a correct receiver must')
    .argument('<url>', 'the receiver URL, e.g. http://127.0.0.1:3000/hooks')
    .addOption(new Option('-t, --type <type>', 'email event type to send').choices(EMAIL_EVENT_TYPES).default(DEFAULT_TYPE))
    .option('-f, --file <path>', 'send this JSON body as it is (its "id" becomes the webhook-id); - reads stdin')
    .option('--email <id>', 'data.id of generated events: the email they are about (default a random UUID)')
    .addOption(new Option('--email-id <id>', 'the older name of --email').hideHelp())
    .addOption(
      new Option(
        '--created-at <time>',
        'created_at of generated events: a date-time (2026-11-20T08:00:00Z), a date (2026-11-20, midnight UTC) or relative to now within 10 years (-5m, -2h)',
      ).argParser((value: string) => parseCreatedAtOption(value)),
    )
    .option('--duplicate', 'send the delivery twice with the same webhook-id (expects 2xx twice)')
    .option('--old-timestamp', `sign with a timestamp ${SKEW_SECONDS} s old, outside the ±300 s window (expects 401)`)
    .addOption(new Option('--stale', 'the older name of --old-timestamp').hideHelp())
    .option('--future', `sign with a timestamp ${SKEW_SECONDS} s ahead (expects 401)`)
    .option('--tampered', 'change the body after signing (expects 401)')
    .option('--wrong-secret', 'sign with another secret (expects 401)')
    .option('--unknown-type', 'send an event type the receiver does not know (expects 2xx)')
    .option('--out-of-order', "send one email's lifecycle events in a scrambled order (expects 2xx each)")
    .addOption(
      new Option('--expect <class>', 'expected answer instead of the natural one: 2xx, 4xx, 5xx or a status such as 401').argParser(
        expectationArg,
      ),
    )
    .addOption(
      new Option('--timeout <ms>', 'per-request timeout in ms (the sender gives up after 10 s)')
        .argParser(wholeNumber(1, 600_000))
        .default(DEFAULT_TIMEOUT_MS),
    )
    .addOption(
      new Option('-n, --count <n>', 'load mode: send N distinct deliveries (1–1000000) and print a summary').argParser(
        wholeNumber(1, 1_000_000),
      ),
    )
    .addOption(
      new Option('-c, --concurrency <c>', 'load mode: requests in flight at once (1–256, default 10)').argParser(wholeNumber(1, 256)),
    )
    .addOption(
      new Option('--duplicates <percent>', 'load mode: percent of requests that repeat an earlier webhook-id (0–100, default 0)').argParser(
        wholeNumber(0, 100),
      ),
    )
    .addOption(
      new Option('--duration <seconds>', 'load mode: stop after this many seconds (1–3600, default 60)').argParser(wholeNumber(1, 3600)),
    )
}

/** The options of `send` that cannot be combined, each pair with the reason. */
function withSendConflicts(command: ExplainedCommand): void {
  command
    .conflict(
      'type',
      ['unknownType', 'outOfOrder'],
      '--unknown-type and --out-of-order choose the event types themselves: leave out --type.',
    )
    .conflict(
      'file',
      ['type', 'email', 'emailId', 'createdAt', 'unknownType', 'outOfOrder', 'count'],
      '--file sends that body as it is: leave out --type, --email, --created-at, --count and the modes that generate events (--unknown-type, --out-of-order), or edit the file.',
    )
    .conflict('email', ['emailId'], '--email-id is the older name of --email: give one of them.')
    .conflict(
      'count',
      MODE_OPTIONS,
      '--count sends distinct generated events, each one authentic: leave out the mode option, or send one at a time without --count.',
    )
  for (const mode of MODE_OPTIONS) {
    command.conflict(
      mode,
      MODE_OPTIONS.filter((other) => other !== mode),
      'choose one mode at a time.',
    )
  }
}

/**
 * Builds the `send` command.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(sendCommand(state))
 */
export const sendCommand: CommandFactory = (state) => {
  const command = withSendOptions(new ExplainedCommand('send'))
  withSecretOptions(command)
  withJson(command)
  withSendConflicts(command)
  command.addHelpText(
    'after',
    examples([
      'email-webhooks send http://localhost:3000/hooks --type email.bounced',
      'email-webhooks send http://localhost:3000/hooks --tampered            # expects 401',
      'email-webhooks send http://localhost:3000/hooks --duplicate           # same webhook-id twice, expects 2xx twice',
      'email-webhooks send http://localhost:3000/hooks --out-of-order',
      'email-webhooks send http://localhost:3000/hooks --type email.queued --email <id> --created-at -5m   # a late event',
      'cat event.json | email-webhooks send http://localhost:3000/hooks --file -',
      'email-webhooks send http://localhost:3000/hooks --old-timestamp --expect 4xx --json',
      'email-webhooks send http://localhost:3000/hooks --count 2000 --concurrency 20 --duplicates 10',
    ]),
  )
  return command.action(async (url: string, options: SendOptions, self: Command) => {
    checkUrl(url)
    const mode = modeOf(options)
    if (options.count === undefined) {
      if (options.concurrency !== undefined || options.duplicates !== undefined || options.duration !== undefined) {
        throw new UsageError('--concurrency, --duplicates and --duration apply to a load: give --count too.')
      }
      return sendOnce(url, options, mode, state)
    }
    const load = loadOptions(options, self)
    state.exitCode = await runLoad(url, resolveSecret(options).value, load, createOutput(options.json === true))
  })
}
