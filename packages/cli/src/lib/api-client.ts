/**
 * The sender's API from the command line: the options every API command takes (`--api-key`,
 * `--api-url`; `--base-url` kept as a hidden alias), and the client built from them. The key
 * comes from `EMAIL_API_KEY` or `--api-key`; messages name its source, never the key.
 */
import { createWebhooksClient, type WebhooksClient } from '@email-webhooks/core/api'
import { type Command, Option } from 'commander'
import { withJson } from './common.js'
import { plainMessage, UsageError } from './errors.js'

/** Environment variables of the API key and base URL. */
export const API_KEY_ENV = 'EMAIL_API_KEY'
export const API_URL_ENV = 'EMAIL_API_URL'

/** The API options as commander parses them. */
export interface ApiOptions {
  apiKey?: string
  apiUrl?: string
  /** The older name of `--api-url`. */
  baseUrl?: string
  json?: boolean
}

/**
 * Adds `--api-key`, `--api-url` (and the hidden `--base-url`) and `--json` to an API command, and
 * makes its usage errors reach `run()` (subcommands do not inherit the program's settings).
 * @param command The command.
 * @param scope The scope its key needs, for `--help`.
 * @example
 * apiOptions(new Command('list'), 'webhooks:manage')
 */
export function apiOptions(command: Command, scope: string): Command {
  command
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .addOption(new Option('--api-key <key>', `API key with the scope ${scope} (prefer ${API_KEY_ENV}: arguments show up in ps)`))
    .addOption(new Option('--api-url <url>', `the API's base URL, ending in /v1 (default ${API_URL_ENV})`))
    .addOption(new Option('--base-url <url>', 'the older name of --api-url').hideHelp())
  return withJson(command)
}

/**
 * The client for these options; the key's source goes into messages, never the key.
 * @param options The parsed options.
 * @param scope The scope the command needs, for the message when there is no key.
 * @throws {UsageError} when there is no key or base URL, or the client refuses them.
 * @example
 * const { client, keySource } = clientFor(options, 'emails:read')
 */
export function clientFor(options: ApiOptions, scope: string): { client: WebhooksClient; keySource: string } {
  const keySource = options.apiKey !== undefined ? '--api-key' : API_KEY_ENV
  const apiKey = options.apiKey ?? process.env[API_KEY_ENV]
  const urlSource = options.apiUrl !== undefined ? '--api-url' : options.baseUrl !== undefined ? '--base-url' : API_URL_ENV
  const baseUrl = options.apiUrl ?? options.baseUrl ?? process.env[API_URL_ENV]
  if (!apiKey) throw new UsageError(`No API key: set ${API_KEY_ENV} (or pass --api-key) to a server-side key with the scope ${scope}.`)
  if (!baseUrl) throw new UsageError(`No API base URL: set ${API_URL_ENV} (or pass --api-url) to the API's base URL, ending in /v1.`)
  const withV1 = suggestV1(baseUrl)
  if (withV1 !== undefined)
    throw new UsageError(`${urlSource} must be the API's base URL, whose path ends in /v1: did you mean ${withV1}? (got ${baseUrl})`)
  try {
    return { client: createWebhooksClient({ apiKey, baseUrl }), keySource }
  } catch (error) {
    // The client refuses the base URL (not https, credentials, a query): nothing about the key.
    throw new UsageError(`${plainMessage(error)} (${urlSource})`)
  }
}

/**
 * The base URL with `/v1` at the end of its path, when it is a URL whose path does not end in `/v1`
 * (`http://127.0.0.1:4000` → `http://127.0.0.1:4000/v1`); undefined otherwise.
 * @example
 * suggestV1('https://api.example.com/') // 'https://api.example.com/v1'
 */
export function suggestV1(baseUrl: string): string | undefined {
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    return undefined
  }
  const path = url.pathname.replace(/\/+$/, '')
  if (path.endsWith('/v1')) return undefined
  url.pathname = `${path}/v1`
  return url.toString()
}
