/**
 * A statement with a deadline that really ends it. `pg` cannot cancel a query whose connection
 * stopped answering (a failover that left the socket open, a dropped NAT entry): its own
 * `query_timeout` rejects the call but leaves the connection in the pool, waiting for an answer
 * that never comes, so every later query on it hangs too (node-postgres #3399). Here a statement
 * runs on a connection checked out of the pool; past its deadline the call rejects and the
 * connection is released with an error, which makes the pool destroy its socket instead of
 * handing it to the next call. Bundled into the PostgreSQL subpath.
 */

/** The part of a `pg` PoolClient the store uses. */
export interface PostgresPoolClient {
  query(config: string | { name: string; text: string; values?: unknown[] }, values?: unknown[]): Promise<unknown>
  /** With an error: the pool destroys the connection instead of keeping it. */
  release(destroy?: Error | boolean): void
}

/** A statement had no answer within the store's `queryTimeoutMs`; its connection was destroyed. */
export class QueryTimeoutError extends Error {
  override readonly name = 'QueryTimeoutError'
  readonly timeoutMs: number
  constructor(step: 'connect' | 'query', timeoutMs: number) {
    super(`no ${step === 'connect' ? 'connection' : 'answer'} within queryTimeoutMs (${timeoutMs} ms)`)
    this.timeoutMs = timeoutMs
  }
}

/**
 * Runs `run` on a connection of `connect()` within `timeoutMs` (the wait for a connection
 * included; one timer for both). On time, the connection goes back to the pool; past the deadline
 * the call rejects and the connection is destroyed (or, when it comes late, given back unused).
 * @throws {QueryTimeoutError} past the deadline; what `connect` or `run` throws otherwise.
 */
export function onConnection<T>(
  connect: () => Promise<PostgresPoolClient>,
  timeoutMs: number,
  run: (client: PostgresPoolClient) => Promise<T>,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let client: PostgresPoolClient | undefined
    let over = false
    const timer = setTimeout(() => {
      over = true
      const error = new QueryTimeoutError(client === undefined ? 'connect' : 'query', timeoutMs)
      client?.release(error)
      reject(error)
    }, timeoutMs)
    connect().then(
      (connection) => {
        if (over) return connection.release()
        client = connection
        run(connection).then(
          (value) => {
            if (over) return
            clearTimeout(timer)
            connection.release()
            resolve(value)
          },
          (error: unknown) => {
            if (over) return
            clearTimeout(timer)
            connection.release()
            reject(error)
          },
        )
      },
      (error: unknown) => {
        if (over) return
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}
