/** How a `pg` error becomes a {@link DedupStoreError} code and an actionable message. Bundled into the PostgreSQL subpath. */
import type { DedupStoreErrorCode } from '@email-webhooks/core'

/** The prefix of every message of this store. */
export const PACKAGE = '[@email-webhooks/core/postgres]'

const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
])

/**
 * Whether opening a connection failed because the server refused the startup parameter
 * `statement_timeout` the store's own pool sends: PgBouncer answers `unsupported startup parameter`
 * (08P01) for every parameter not in its `ignore_startup_parameters`, and so do poolers built on it.
 */
export function refusedStatementTimeout(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message
  return typeof message === 'string' && /startup parameter/i.test(message) && /statement_timeout/.test(message)
}

/** The code and message (with `{target}` where the redacted server goes) for an error `pg` threw. */
export function classify(error: unknown): { code: DedupStoreErrorCode; message: string } {
  const e = (error ?? {}) as { code?: unknown; message?: unknown }
  const sqlState = typeof e.code === 'string' ? e.code : ''
  const detail = typeof e.message === 'string' ? e.message : String(error)
  if ((error as { name?: unknown } | null)?.name === 'QueryTimeoutError') {
    if ((error as { step?: unknown }).step === 'connect') {
      return {
        code: 'timeout',
        message: `{target} did not answer: ${detail}; every connection of the pool was busy or hung (a stalled connection after a failover, a proxy that stopped answering, or an overloaded server), and the statement was not sent. Check the server and the network.`,
      }
    }
    return {
      code: 'timeout',
      message: `{target} did not answer: ${detail}; the connection was destroyed (a stalled connection after a failover, a proxy that stopped answering, or an overloaded server). Check the server and the network.`,
    }
  }
  if (refusedStatementTimeout(error)) {
    return {
      code: 'misconfigured',
      message: `{target} refused the startup parameter statement_timeout set in the connection string, PGOPTIONS or pg.defaults ("unsupported startup parameter", as PgBouncer answers for those not in its ignore_startup_parameters): remove it there (the pool the store makes asks for one a tenth under queryTimeoutMs, and goes on without it where a pooler refuses it), or set the limit on the role (ALTER ROLE … IN DATABASE … SET statement_timeout).`,
    }
  }
  if (sqlState === '57014') {
    return {
      code: 'timeout',
      message: `{target} canceled the statement (57014: at its statement_timeout, which the store's own pool sets a tenth under queryTimeoutMs, or one set on the role or the pool; or a cancel request) and kept nothing it would have written: it waited on a lock, had too much to do, or the server is overloaded. Look for long transactions holding locks on the store's tables (pg_stat_activity) and check the server's load.`,
    }
  }
  if (NETWORK_ERRORS.has(sqlState)) {
    return {
      code: 'connection_failed',
      message: `cannot reach {target} (${sqlState}): check that the server runs and that the host and port are right.`,
    }
  }
  if (
    /timeout exceeded when trying to connect|Connection terminated|connection timeout|not queryable/i.test(detail) ||
    sqlState.startsWith('08')
  ) {
    return {
      code: 'connection_failed',
      message: `lost or could not open the connection to {target} (${detail}): check the server, the network and its connection limits.`,
    }
  }
  if (sqlState === '57P01' || sqlState === '57P02' || sqlState === '57P03') {
    return { code: 'connection_failed', message: `{target} is shutting down or starting (${sqlState}); the sender retries later.` }
  }
  if (sqlState === '28P01' || sqlState === '28000') {
    return {
      code: 'auth_failed',
      message: `{target} refused the credentials (${sqlState}): check the user name and password, and pg_hba.conf.`,
    }
  }
  if (sqlState === '3D000') {
    return {
      code: 'misconfigured',
      message: `the database does not exist on {target} (${detail}): create it or fix the connection string.`,
    }
  }
  if (sqlState === '42P01') {
    return {
      code: 'misconfigured',
      message: `the dedup table is missing on {target} (${detail}): run postgresDedupTableSql() in a migration, or leave createTable on.`,
    }
  }
  if (sqlState === '42501') {
    return {
      code: 'misconfigured',
      message: `permission denied on {target} (${detail}): grant the role SELECT, INSERT, UPDATE and DELETE on the dedup table (and CREATE if the store creates it).`,
    }
  }
  return { code: 'command_failed', message: `a query failed on {target}${sqlState ? ` (${sqlState})` : ''}: ${detail}` }
}
