/** `send <url>`: one signed delivery (or a spoiled one, or a lifecycle out of order), or a load with --count. */
import { EMAIL_EVENT_TYPES } from '@email-webhooks/core'
import { Command, Option } from 'commander'
import { type CommandFactory, examples, type RunState, withJson, withSecretOptions } from '../lib/common.js'
import { UsageError } from '../lib/errors.js'
import { parseExpectation } from '../lib/expect.js'
import { checkUrl, DEFAULT_TIMEOUT_MS, displayUrl, post } from '../lib/http.js'
import { parseWhole, readInput } from '../lib/input.js'
import { type LoadOptions, runLoad } from '../lib/load.js'
import { createOutput } from '../lib/output.js'
import { MODES, type Mode, planSend } from '../lib/plan.js'
import { exitCodeOf, formatLine, isRight, type RequestRecord, toJson } from '../lib/report.js'
import { resolveSecret } from '../lib/secret.js'

const DEFAULT_TYPE = 'email.bounced'

interface SendOptions {
  type: string
  file?: string
  emailId?: string
  secret?: string
  envFile?: string
  json?: boolean
  expect?: string
  timeout: string
  duplicate?: boolean
  stale?: boolean
  future?: boolean
  tampered?: boolean
  wrongSecret?: boolean
  unknownType?: boolean
  outOfOrder?: boolean
  count?: string
  concurrency?: string
  duplicates?: string
  duration?: string
}

function modeOf(options: SendOptions): Mode {
  const chosen = MODES.filter((mode) => options[mode] === true)
  if (chosen.length > 1) throw new UsageError(`Choose one mode at a time, got ${chosen.length}: ${chosen.join(', ')}.`)
  return chosen[0] ?? 'plain'
}

async function sendOnce(url: string, options: SendOptions, mode: Mode, command: Command, state: RunState): Promise<void> {
  const out = createOutput(options.json === true)
  const typeGiven = command.getOptionValueSource('type') === 'cli'
  if (options.file !== undefined && (typeGiven || options.emailId !== undefined || mode === 'unknownType' || mode === 'outOfOrder')) {
    throw new UsageError(
      '--file sends that body as it is: it cannot be combined with --type, --email-id, --unknown-type or --out-of-order.',
    )
  }
  if (typeGiven && (mode === 'unknownType' || mode === 'outOfOrder')) {
    throw new UsageError(`--${mode === 'unknownType' ? 'unknown-type' : 'out-of-order'} chooses the event types itself: leave out --type.`)
  }
  const secret = resolveSecret(options)
  const expect = options.expect === undefined ? undefined : parseExpectation(options.expect)
  const timeoutMs = parseWhole(options.timeout, '--timeout', 1, 600_000)
  const body = options.file === undefined ? undefined : await readInput(options.file, 'body file')
  const planned = await planSend({
    mode,
    secret: secret.value,
    type: options.type,
    ...(body === undefined ? {} : { body }),
    ...(options.emailId === undefined ? {} : { emailId: options.emailId }),
    ...(expect === undefined ? {} : { expect }),
  })
  out.line(out.colors.dim(`POST ${displayUrl(url)} (secret from ${secret.source})`))
  const records: RequestRecord[] = []
  for (const request of planned) {
    const answer = await post(url, request.delivery, { timeoutMs })
    const record: RequestRecord = { ...request, answer }
    records.push(record)
    out.line(formatLine(record, out.colors))
  }
  out.data({ ok: records.every(isRight), mode: mode === 'plain' ? 'send' : mode, url: displayUrl(url), requests: records.map(toJson) })
  state.exitCode = exitCodeOf(records)
}

function loadOptions(options: SendOptions, mode: Mode, command: Command): LoadOptions {
  if (mode !== 'plain' || options.file !== undefined) {
    throw new UsageError('--count sends distinct generated events: it cannot be combined with a mode option or --file.')
  }
  const expect = options.expect === undefined ? undefined : parseExpectation(options.expect)
  return {
    count: parseWhole(options.count as string, '--count', 1, 1_000_000),
    concurrency: parseWhole(options.concurrency ?? '10', '--concurrency', 1, 256),
    duplicatePercent: parseWhole(options.duplicates ?? '0', '--duplicates', 0, 100),
    durationSeconds: parseWhole(options.duration ?? '60', '--duration', 1, 3600),
    timeoutMs: parseWhole(options.timeout, '--timeout', 1, 600_000),
    type: options.type,
    typeGiven: command.getOptionValueSource('type') === 'cli',
    ...(options.emailId === undefined ? {} : { emailId: options.emailId }),
    ...(expect === undefined ? {} : { expect }),
  }
}

/**
 * Builds the `send` command.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(sendCommand(state))
 */
export const sendCommand: CommandFactory = (state) => {
  const command = new Command('send')
    .description('POST signed test deliveries to a receiver and say whether it answered as a correct receiver must')
    .argument('<url>', 'the receiver URL, e.g. http://127.0.0.1:3000/hooks')
    .addOption(new Option('-t, --type <type>', 'email event type to send').choices(EMAIL_EVENT_TYPES).default(DEFAULT_TYPE))
    .option('-f, --file <path>', 'send this JSON body as it is (its "id" becomes the webhook-id); - reads stdin')
    .option('--email-id <id>', 'data.id of generated events (default a random UUID)')
    .option('--duplicate', 'send the delivery twice with the same webhook-id (expects 2xx twice)')
    .option('--stale', 'sign with a timestamp 600 s old (expects 401)')
    .option('--future', 'sign with a timestamp 600 s ahead (expects 401)')
    .option('--tampered', 'change the body after signing (expects 401)')
    .option('--wrong-secret', 'sign with another secret (expects 401)')
    .option('--unknown-type', 'send an event type the receiver does not know (expects 2xx)')
    .option('--out-of-order', "send one email's lifecycle events in a scrambled order (expects 2xx each)")
    .option('--expect <class>', 'expected answer instead of the natural one: 2xx, 4xx, 5xx or a status such as 401')
    .option('--timeout <ms>', 'per-request timeout in ms (the sender gives up after 10 s)', String(DEFAULT_TIMEOUT_MS))
    .option('-n, --count <n>', 'load mode: send N distinct deliveries (1–1000000) and print a summary')
    .option('-c, --concurrency <c>', 'load mode: requests in flight at once (1–256, default 10)')
    .option('--duplicates <percent>', 'load mode: percent of requests that repeat an earlier webhook-id (0–100, default 0)')
    .option('--duration <seconds>', 'load mode: stop after this many seconds (1–3600, default 60)')
  withSecretOptions(command)
  withJson(command)
  command.addHelpText(
    'after',
    examples([
      'email-webhooks send http://localhost:3000/hooks --type email.bounced',
      'email-webhooks send http://localhost:3000/hooks --tampered            # expects 401',
      'email-webhooks send http://localhost:3000/hooks --duplicate           # same webhook-id twice, expects 2xx twice',
      'email-webhooks send http://localhost:3000/hooks --out-of-order',
      'cat event.json | email-webhooks send http://localhost:3000/hooks --file -',
      'email-webhooks send http://localhost:3000/hooks --stale --expect 4xx --json',
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
      return sendOnce(url, options, mode, self, state)
    }
    const load = loadOptions(options, mode, self)
    state.exitCode = await runLoad(url, resolveSecret(options).value, load, createOutput(options.json === true))
  })
}
