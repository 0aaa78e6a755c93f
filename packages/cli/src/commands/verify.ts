/**
 * `verify [body]`: checks a captured request with core's verifyWebhook and says exactly why it
 * fails (the error code and its message), with hints for the usual causes: a final newline the
 * request did not have, a body re-encoded on its way (which one), else the secret. Never prints the
 * secret, the signature or the body.
 */
import { DEFAULT_TOLERANCE_SECONDS, parseEnvelope, verifyWebhook, WebhookVerificationError } from '@email-webhooks/core'
import { Command, Option } from 'commander'
import { type CommandFactory, examples, withJson, withSecretOptions } from '../lib/common.js'
import { EXIT, UsageError } from '../lib/errors.js'
import { type HeaderRecord, parseHeaderLines, parseHeadersFile } from '../lib/headers.js'
import { readInput, wholeNumber } from '../lib/input.js'
import { createOutput } from '../lib/output.js'
import { reencodings } from '../lib/reencode.js'
import { resolveSecret } from '../lib/secret.js'

interface VerifyOptions {
  headers?: string
  header?: string[]
  now?: number
  tolerance: number
  secret?: string
  envFile?: string
  json?: boolean
}

interface Verdict {
  valid: boolean
  id?: string
  timestamp?: number
  type?: string
  code?: string
  status?: number
  message?: string
  /** When the signature matches a re-encoding of the body: which one (e.g. `compact JSON (…)`). */
  reencoding?: string
  hints: string[]
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value]

async function check(headers: HeaderRecord, body: Uint8Array, secret: string, tolerance: number, nowMs: number): Promise<Verdict> {
  const now = () => nowMs
  try {
    const verified = await verifyWebhook({ headers, body, secret, toleranceSeconds: tolerance, now })
    const event = parseEnvelope(body, verified.id)
    return { valid: true, id: verified.id, timestamp: verified.timestamp, type: event.type, hints: [] }
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    return {
      valid: false,
      code: error.code,
      // The receiver acknowledges a signed body that is not an envelope (200, ignored) rather than
      // refuse it: the sender would resend the same bytes until it disables the endpoint.
      status: error.code === 'invalid_envelope' ? 200 : error.status,
      message: error.message,
      ...(await hintsFor(error, headers, body, secret)),
    }
  }
}

/** Retries with the usual culprits removed or undone, to say which one it was. */
async function hintsFor(
  error: WebhookVerificationError,
  headers: HeaderRecord,
  body: Uint8Array,
  secret: string,
): Promise<{ hints: string[]; reencoding?: string }> {
  const retry = async (input: Uint8Array, at?: number): Promise<boolean> =>
    verifyWebhook({ headers, body: input, secret, ...(at === undefined ? {} : { now: () => at }) }).then(
      () => true,
      () => false,
    )
  const hints: string[] = []
  const timestamp = Number(headers['webhook-timestamp'])
  if (error.code === 'timestamp_too_old' || error.code === 'timestamp_too_new') {
    const ago = Math.round(Date.now() / 1000 - timestamp)
    hints.push(`It was signed at ${new Date(timestamp * 1000).toISOString()} (${ago >= 0 ? `${ago} s ago` : `${-ago} s ahead`}).`)
    hints.push(
      (await retry(body, timestamp * 1000))
        ? `The signature itself is valid: checked as of its own timestamp it verifies (pass --now ${timestamp} to check a captured request).`
        : 'The signature does not match either, even as of its own timestamp: check the secret and the body too.',
    )
  }
  if (error.code !== 'signature_mismatch') return { hints }
  for (const [ending, label] of [
    [[0x0d, 0x0a], 'CRLF'],
    [[0x0a], 'newline'],
  ] as const) {
    const n = ending.length
    if (body.length >= n && ending.every((byte, i) => body[body.length - n + i] === byte)) {
      if (await retry(body.subarray(0, body.length - n))) {
        hints.push(
          `The signature matches the body without its final ${label}: the body file has one the request did not (editors and echo add one).`,
        )
        return { hints }
      }
    }
  }
  // The window was checked already (a mismatch comes after it): only the bytes can differ now.
  for (const { name, bytes } of reencodings(body)) {
    if (await retry(bytes)) {
      hints.push(
        `The signature matches the body re-encoded as: ${name}. Something between the sender and your app re-encodes the body (a proxy or a body parser): verify the raw bytes as received, before any parsing.`,
      )
      return { hints, reencoding: name }
    }
  }
  hints.push(
    `No usual re-encoding of the body matches either (compact or pretty-printed JSON, \\uXXXX escapes, a final newline): the secret is the likely cause. Check that it is this endpoint's secret (shown once when the endpoint was created), and that the body file holds the exact bytes received.`,
  )
  return { hints }
}

async function readHeaders(options: VerifyOptions): Promise<HeaderRecord> {
  if (options.headers === undefined && options.header === undefined) {
    throw new UsageError('Give the captured headers: --headers <file> or --header "name: value" (repeatable).')
  }
  const record =
    options.headers === undefined
      ? {}
      : parseHeadersFile(new TextDecoder().decode(await readInput(options.headers, 'headers file')), options.headers)
  return parseHeaderLines(options.header ?? [], '--header', record)
}

/**
 * Builds the `verify` command.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(verifyCommand(state))
 */
export const verifyCommand: CommandFactory = (state) => {
  const command = new Command('verify')
    .description('check a captured request (headers + body) with the verifier receivers use, and say exactly why it fails')
    .argument('[body]', 'file with the exact body received; - or nothing reads stdin', '-')
    .option('--headers <file>', 'captured headers: "Name: value" lines (raw HTTP, curl -D) or a JSON object')
    .option('-H, --header <line>', 'one header "Name: value" (repeatable; added to --headers)', collect)
    .addOption(
      new Option('--now <seconds>', 'check the ±window as of this Unix time (default now), e.g. the capture time').argParser(
        wholeNumber(0, 999_999_999_999),
      ),
    )
    .addOption(
      new Option('--tolerance <seconds>', 'window in seconds, past or future')
        .argParser(wholeNumber(0, 86_400 * 365))
        .default(DEFAULT_TOLERANCE_SECONDS),
    )
  withSecretOptions(command)
  withJson(command)
  command.addHelpText(
    'after',
    examples([
      'email-webhooks verify body.json --headers headers.txt',
      "email-webhooks verify body.json -H 'webhook-id: …' -H 'webhook-timestamp: …' -H 'webhook-signature: …'",
      'email-webhooks verify body.json --headers headers.json --now 1767225600 --json',
    ]),
  )
  return command.action(async (file: string, options: VerifyOptions) => {
    const out = createOutput(options.json === true)
    const secret = resolveSecret(options)
    const tolerance = options.tolerance
    const nowMs = options.now === undefined ? Date.now() : options.now * 1000
    const headers = await readHeaders(options)
    const body = await readInput(file, 'body file')
    const verdict = await check(headers, body, secret.value, tolerance, nowMs)
    out.data(verdict)
    const { colors } = out
    if (verdict.valid) {
      out.line(
        `${colors.green('✓ valid')}: ${verdict.type} webhook-id ${verdict.id}, signed at ${new Date((verdict.timestamp as number) * 1000).toISOString()}, within ±${tolerance} s`,
      )
    } else {
      out.line(`${colors.red(`✗ ${verdict.code}`)} (a receiver answers ${verdict.status}): ${verdict.message}`)
      for (const hint of verdict.hints) out.line(`  ${colors.yellow('hint:')} ${hint}`)
    }
    state.exitCode = verdict.valid ? EXIT.ok : EXIT.unexpected
  })
}
