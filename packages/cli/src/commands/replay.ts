/** `replay <file> <url>`: re-sends recorded deliveries, in file order, re-signed with fresh timestamps. */
import { signWebhook } from '@email-webhooks/core'
import { Command, Option } from 'commander'
import { type CommandFactory, examples, withJson, withSecretOptions } from '../lib/common.js'
import { expectationArg, SENDER_SUCCESS } from '../lib/expect.js'
import { checkUrl, DEFAULT_TIMEOUT_MS, displayUrl, post } from '../lib/http.js'
import { readInput, wholeNumber } from '../lib/input.js'
import { createOutput } from '../lib/output.js'
import { parseReplayFile } from '../lib/replay-file.js'
import { exitCodeOf, formatLine, isRight, type RequestRecord, toJson } from '../lib/report.js'
import { resolveSecret } from '../lib/secret.js'

interface ReplayOptions {
  expect?: string
  timeout: number
  secret?: string
  envFile?: string
  json?: boolean
}

/**
 * Builds the `replay` command.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(replayCommand(state))
 */
export const replayCommand: CommandFactory = (state) => {
  const command = new Command('replay')
    .description('re-send deliveries recorded in a JSON-lines file, re-signed with fresh timestamps, keeping each event id')
    .argument('<file>', 'JSON lines: {"body": <raw string or object>, "headers"?: {…}} or a bare event envelope per line; - reads stdin')
    .argument('<url>', 'the receiver URL')
    .addOption(new Option('--expect <class>', 'expected answer for every delivery (default 2xx)').argParser(expectationArg))
    .addOption(new Option('--timeout <ms>', 'per-request timeout in ms').argParser(wholeNumber(1, 600_000)).default(DEFAULT_TIMEOUT_MS))
  withSecretOptions(command)
  withJson(command)
  command.addHelpText(
    'after',
    examples([
      'email-webhooks replay captured.jsonl http://localhost:3000/hooks',
      'grep email.bounced production.jsonl | email-webhooks replay - http://localhost:3000/hooks --json',
    ]),
  )
  return command.action(async (file: string, url: string, options: ReplayOptions) => {
    checkUrl(url)
    const out = createOutput(options.json === true)
    const secret = resolveSecret(options)
    const expected = options.expect ?? SENDER_SUCCESS
    const timeoutMs = options.timeout
    const deliveries = parseReplayFile(new TextDecoder().decode(await readInput(file, 'replay file')))
    out.line(out.colors.dim(`POST ${displayUrl(url)}: ${deliveries.length} recorded deliveries (secret from ${secret.source})`))
    const records: RequestRecord[] = []
    for (const delivery of deliveries) {
      const signed = await signWebhook({ secret: secret.value, body: delivery.body, id: delivery.webhookId })
      const answer = await post(
        url,
        { headers: { ...signed.headers, 'content-type': delivery.contentType }, body: delivery.body },
        { timeoutMs },
      )
      const record: RequestRecord = {
        label: `line ${delivery.line}`,
        webhookId: delivery.webhookId,
        type: delivery.type,
        expected,
        reason: 'a recorded delivery re-sent with a fresh signature is acknowledged',
        ...(expected === SENDER_SUCCESS ? {} : { natural: SENDER_SUCCESS }),
        answer,
      }
      records.push(record)
      out.line(formatLine(record, out.colors))
    }
    out.data({ ok: records.every(isRight), url: displayUrl(url), requests: records.map(toJson) })
    state.exitCode = exitCodeOf(records)
  })
}
