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
  /** A checked-out connection that breaks emits 'error' (the pool listens only to idle ones). */
  on(event: 'error', listener: (error: Error) => void): unknown
  removeListener(event: 'error', listener: (error: Error) => void): unknown
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
 * included; one timer for both). On time and without error, the connection goes back to the pool;
 * after an error (as `pool.query` does) or past the deadline it is destroyed; one that comes after
 * the deadline is given back unused. A connection that breaks while it is checked out emits
 * 'error', which the pool does not listen to then: it is taken here, or it would end the process.
 * @throws {QueryTimeoutError} past the deadline; what `connect` or `run` throws otherwise.
 */
export function onConnection<T>(
  connect: () => Promise<PostgresPoolClient>,
  timeoutMs: number,
  run: (client: PostgresPoolClient) => Promise<T>,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let over = false
    let end: ((error: Error | undefined, value?: T) => void) | undefined
    const timer = setTimeout(() => {
      const error = new QueryTimeoutError(end === undefined ? 'connect' : 'query', timeoutMs)
      if (end) end(error)
      else {
        over = true
        reject(error)
      }
    }, timeoutMs)
    connect().then(
      (client) => {
        if (over) return client.release()
        const onError = (error: Error): void => end?.(error)
        end = (error, value) => {
          if (over) return
          over = true
          clearTimeout(timer)
          client.removeListener('error', onError)
          client.release(error)
          if (error) reject(error)
          else resolve(value as T)
        }
        client.on('error', onError)
        run(client).then(
          (value) => end?.(undefined, value),
          (error: unknown) => end?.(error instanceof Error ? error : new Error(String(error))),
        )
      },
      (error: unknown) => {
        if (over) return
        over = true
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}
