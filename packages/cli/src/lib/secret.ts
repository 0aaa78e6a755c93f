/**
 * Finds the endpoint secret: `--secret`, else `EMAIL_WEBHOOK_SECRET`, else that key in a .env
 * file (`--env-file`, else ./.env). The secret is never printed: messages name its source only.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseEnv } from 'node:util'
import { assertValidSecrets } from '@email-webhooks/core'
import { plainMessage, UsageError } from './errors.js'

/** The environment variable (and .env key) that holds the secret. */
export const SECRET_ENV = 'EMAIL_WEBHOOK_SECRET'
const DEFAULT_ENV_FILE = '.env'

/** Options that say where the secret comes from. */
export interface SecretOptions {
  secret?: string
  envFile?: string
}

/** A secret and where it was found (for messages; never the value). */
export interface ResolvedSecret {
  value: string
  source: string
}

function fromEnvFile(path: string, explicit: boolean): string | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if (!explicit && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new UsageError(`Cannot read the env file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'unknown error'}.`)
  }
  return parseEnv(text)[SECRET_ENV]
}

/**
 * Resolves and validates the secret.
 * @param options `--secret` and `--env-file` as given.
 * @param env The process environment.
 * @throws {UsageError} when no secret is found or it is not a valid secret (the message never contains it).
 * @example
 * const { value } = resolveSecret({ secret: options.secret }, process.env)
 */
export function resolveSecret(options: SecretOptions, env: NodeJS.ProcessEnv = process.env): ResolvedSecret {
  const found = findSecret(options, env)
  if (found === undefined) {
    throw new UsageError(
      `No secret: pass --secret, set ${SECRET_ENV}, or put ${SECRET_ENV}=... in ./.env (or the file given with --env-file). It is the endpoint secret shown when the webhook endpoint was created.`,
    )
  }
  return found
}

/**
 * Looks the secret up as {@link resolveSecret} does, and validates it; undefined when there is none.
 * @param options `--secret` and `--env-file` as given.
 * @param env The process environment.
 * @throws {UsageError} when an env file given with --env-file cannot be read, or the secret found is not a valid secret.
 * @example
 * const given = findSecret(options) // undefined: make a throwaway one
 */
export function findSecret(options: SecretOptions, env: NodeJS.ProcessEnv = process.env): ResolvedSecret | undefined {
  let found: ResolvedSecret | undefined
  if (options.secret !== undefined) found = { value: options.secret, source: '--secret' }
  else if (env[SECRET_ENV] !== undefined && env[SECRET_ENV] !== '') found = { value: env[SECRET_ENV], source: SECRET_ENV }
  else {
    const path = resolve(options.envFile ?? DEFAULT_ENV_FILE)
    const value = fromEnvFile(path, options.envFile !== undefined)
    if (value !== undefined) found = { value, source: `${SECRET_ENV} in ${path}` }
  }
  if (found === undefined) return undefined
  try {
    assertValidSecrets(found.value)
  } catch (error) {
    // Core's messages describe the problem without quoting the secret.
    throw new UsageError(`The secret from ${found.source} is not usable: ${plainMessage(error)}`)
  }
  return found
}
