/** `sign [file]`: the three webhook headers for a body, and a ready curl command that sends it. */
import { DEFAULT_TOLERANCE_SECONDS, signWebhook } from '@email-webhooks/core'
import { Command, InvalidArgumentError, Option } from 'commander'
import { type CommandFactory, examples, withJson, withSecretOptions } from '../lib/common.js'
import { EXIT, UsageError } from '../lib/errors.js'
import { describeBody, readInput, wholeNumber } from '../lib/input.js'
import { createOutput } from '../lib/output.js'
import { resolveSecret } from '../lib/secret.js'

const DEFAULT_URL = 'http://localhost:3000/hooks'
// What receivers accept as a webhook-id (see core's verifier), without quotes so the curl line stays simple.
const VALID_ID = /^[\x21-\x7e]{1,256}$/

interface SignOptions {
  id?: string
  timestamp?: number
  url: string
  secret?: string
  envFile?: string
  json?: boolean
}

/** `--timestamp`: Unix seconds; a value in milliseconds is refused with the seconds to use. */
function unixSeconds(value: string): number {
  if (/^\d{13}$/.test(value)) {
    throw new InvalidArgumentError(
      `--timestamp is in seconds (the webhook-timestamp header is Unix seconds); "${value}" looks like milliseconds: use ${value.slice(0, 10)}.`,
    )
  }
  return wholeNumber(0, 999_999_999_999)(value)
}

const quote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`

/**
 * Builds the `sign` command.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(signCommand(state))
 */
export const signCommand: CommandFactory = (state) => {
  const command = new Command('sign')
    .description('print the webhook-id, webhook-timestamp and webhook-signature headers for a body, with a curl command')
    .argument('[file]', 'the exact body to sign; - or nothing reads stdin', '-')
    .option('--id <id>', 'webhook-id (default the body\'s "id", else a random UUID)')
    .addOption(new Option('--timestamp <seconds>', 'Unix time to sign at (default now)').argParser(unixSeconds))
    .option('--url <url>', 'receiver URL for the curl example', DEFAULT_URL)
  withSecretOptions(command)
  withJson(command)
  command.addHelpText(
    'after',
    examples([
      'email-webhooks sign event.json',
      'email-webhooks sign event.json --url https://example.com/hooks --json',
      'echo -n \'{"id":"…","type":"email.bounced",…}\' | email-webhooks sign',
    ]),
  )
  return command.action(async (file: string, options: SignOptions) => {
    const out = createOutput(options.json === true)
    const secret = resolveSecret(options)
    const { timestamp } = options
    const body = await readInput(file, 'body file')
    if (body.length === 0) {
      out.error(
        `warning: the body is empty (${file === '-' ? 'nothing came on stdin' : `${file} has 0 bytes`}): this signs it all the same, and a receiver acknowledges it (200, ignored: invalid_envelope) without running a handler. Sign the event's JSON: a file, or pipe it in.`,
      )
    }
    const inside = describeBody(body).id
    const id = options.id ?? inside ?? crypto.randomUUID()
    if (inside !== undefined && inside !== id) {
      out.error(
        `warning: the body's "id" differs from --id; a receiver acknowledges it (200, ignored: invalid_envelope) without running a handler. Change the body's "id" instead.`,
      )
    }
    if (!VALID_ID.test(id) || /[.,'"]/.test(id)) {
      throw new UsageError(
        `The webhook-id ${options.id === undefined ? '(the body\'s "id")' : '(--id)'} must be 1–256 visible ASCII characters without '.', ',' or quotes.`,
      )
    }
    const { headers } = await signWebhook({ secret: secret.value, body, id, ...(timestamp === undefined ? {} : { timestamp }) })
    const names = Object.keys(headers)
    const curl = [
      `curl -X POST ${quote(options.url)}`,
      ...names.map((name) => `-H ${quote(`${name}: ${headers[name]}`)}`),
      `--data-binary ${file === '-' ? '@-' : quote(`@${file}`)}`,
    ].join(' \\\n  ')
    const signedAt = Number(headers['webhook-timestamp'])
    const validUntil = new Date((signedAt + DEFAULT_TOLERANCE_SECONDS) * 1000).toISOString()
    out.data({ headers, curl, validUntil })
    for (const name of names.filter((name) => name.startsWith('webhook-'))) out.line(`${name}: ${headers[name]}`)
    out.line('')
    out.line(curl)
    out.line(
      out.colors.dim(
        `# valid until ${validUntil} (±${DEFAULT_TOLERANCE_SECONDS} s window)${file === '-' ? '; pipe the same bytes to curl' : ''}`,
      ),
    )
    if (options.id === undefined && inside !== undefined) {
      out.line(
        out.colors.dim(
          `# webhook-id is the body's "id": a receiver that already handled it answers {"duplicate":true} and runs no handler; give the body a new "id" to send a new event`,
        ),
      )
    }
    state.exitCode = EXIT.ok
  })
}
