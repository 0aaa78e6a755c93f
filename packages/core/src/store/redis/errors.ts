/** How an ioredis error becomes a {@link DedupStoreError} code and an actionable message. Bundled into the Redis subpath. */
import type { DedupStoreErrorCode } from '@email-webhooks/core'

/** The prefix of every message of this store. */
export const PACKAGE = '[@email-webhooks/core/redis]'

/** The code and message (without the package prefix, not yet scrubbed) for an error ioredis threw talking to `target`. */
export function classify(error: unknown, target: string): { code: DedupStoreErrorCode; message: string } {
  const detail = error instanceof Error ? error.message : String(error)
  const errno = (error as { code?: unknown } | null)?.code
  let code: DedupStoreErrorCode
  let message: string
  if (/^(NOAUTH|WRONGPASS)/.test(detail) || /invalid password|invalid username-password/i.test(detail)) {
    code = 'auth_failed'
    message = `${target} refused the credentials: check the password (and user) in the URL or the client.`
  } else if (/Command timed out|Socket timeout/i.test(detail)) {
    code = 'timeout'
    message = `${target} did not answer in time (${detail}); a connection that owes an answer that long is dropped and opened again (a stalled connection after a failover, a proxy that stopped answering, or an overloaded server). Check the server and the network.`
  } else if (
    (typeof errno === 'string' && /^E[A-Z]+$/.test(errno)) ||
    /Connection is closed|MaxRetriesPerRequest|connect ETIMEDOUT|Stream isn't writeable|enableOfflineQueue/i.test(detail)
  ) {
    code = 'connection_failed'
    message = `cannot reach ${target}${typeof errno === 'string' ? ` (${errno})` : ''}: check that the server runs and that the host and port are right.`
  } else if (/^(OOM|READONLY|MISCONF|NOPERM)/.test(detail)) {
    code = 'misconfigured'
    message = `${target} refused the write (${detail.split(' ')[0]}): ${detail}. Check maxmemory, that the client talks to the primary, and the user's ACL.`
  } else {
    code = 'command_failed'
    message = `a command failed on ${target}: ${detail}`
  }
  return { code, message }
}

/**
 * ioredis attaches the failed command with its arguments to a reply error; for AUTH (sent on
 * connect) those are the password. The cause we keep has the message, name and code only.
 */
export function withoutCommand(error: unknown): unknown {
  if (!(error instanceof Error) || !('command' in error)) return error
  const copy = new Error(error.message)
  copy.name = error.name
  const code = (error as { code?: unknown }).code
  if (code !== undefined) Object.assign(copy, { code })
  return copy
}
