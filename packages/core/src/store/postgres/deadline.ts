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

/** No connection came within the wait for one, or a statement had no answer within `queryTimeoutMs`; a connection it hung on was destroyed. */
export class QueryTimeoutError extends Error {
  override readonly name = 'QueryTimeoutError'
  readonly step: 'connect' | 'query'
  readonly timeoutMs: number
  constructor(step: 'connect' | 'query', timeoutMs: number) {
    super(
      step === 'connect'
        ? `no free connection within ${timeoutMs} ms (half of queryTimeoutMs)`
        : `no answer within queryTimeoutMs (${timeoutMs} ms)`,
    )
    this.step = step
    this.timeoutMs = timeoutMs
  }
}

/** The two deadlines of one statement. */
export interface StatementDeadlines {
  /** The longest wait for a connection of the pool. */
  connectMs: number
  /** The longest wait for the statement's answer, from when it is sent. */
  queryMs: number
}

/**
 * The wait for a connection that `queryTimeoutMs` allows: half of it. A caller that waited longer
 * was answered already (the receiver's `storeTimeoutMs` is half the default `queryTimeoutMs`), so
 * its statement is not sent at all: a claim sent with the last milliseconds of a long wait would
 * take a lease nobody holds, which keeps the event's retries out (409) until the lease lapses.
 */
export function connectWaitMs(queryTimeoutMs: number): number {
  return Math.max(1, Math.ceil(queryTimeoutMs / 2))
}

/**
 * The server-side `statement_timeout` the store's own pool gives each connection: a tenth under
 * `queryTimeoutMs`, so that PostgreSQL ends a statement (and rolls back what it would have
 * written) before the store gives up on it. Without it, a claim that waited on a lock past
 * `queryTimeoutMs` lost its connection here and then committed on the server all the same, a lease
 * nobody held: the event's retries met 409 until the lease ran out. The tenth is the time the
 * server's answer has to come back. Undefined (no server-side limit) when `queryTimeoutMs` leaves
 * less than 1 ms.
 */
export function serverStatementTimeoutMs(queryTimeoutMs: number): number | undefined {
  const ms = queryTimeoutMs - Math.ceil(queryTimeoutMs / 10)
  return ms >= 1 ? ms : undefined
}

/**
 * Runs `run` on a connection of `connect()`: the connection must come within `connectMs`, and the
 * statement then gets its whole `queryMs` from when it is sent (a statement sent after a long wait
 * for a connection is not cut off after the server ran it). On time and without error, the
 * connection goes back to the pool; after an error (as `pool.query` does) or past the deadline it
 * is destroyed; one that comes after its deadline is given back unused, its statement never sent.
 * A connection that breaks while it is checked out emits 'error', which the pool does not listen
 * to then: it is taken here, or it would end the process. With a `lane`, the call first takes a
 * place in it (the wait counts against `connectMs`), and gives it back with the connection.
 * @throws {QueryTimeoutError} past either deadline; what `connect` or `run` throws otherwise.
 */
export function onConnection<T>(
  connect: () => Promise<PostgresPoolClient>,
  deadlines: StatementDeadlines,
  run: (client: PostgresPoolClient) => Promise<T>,
  lane?: Lane,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let over = false
    let inLane = false
    let leaveQueue: (() => void) | undefined
    const leaveLane = () => {
      if (!inLane) return
      inLane = false
      lane?.leave()
    }
    let timer = setTimeout(() => {
      over = true
      leaveQueue?.()
      reject(new QueryTimeoutError('connect', deadlines.connectMs))
    }, deadlines.connectMs)
    const start = () => {
      let connecting: Promise<PostgresPoolClient>
      try {
        connecting = connect()
      } catch (error) {
        // pg builds the client synchronously (a certificate file it cannot read throws here): a
        // failed connect, which must give its place in the lane back like any other.
        connecting = Promise.reject(error)
      }
      return connecting.then(
        (client) => {
          if (over) {
            client.release()
            return leaveLane()
          }
          clearTimeout(timer)
          const end = (error: Error | undefined, value?: T) => {
            if (over) return
            over = true
            clearTimeout(timer)
            client.removeListener('error', onError)
            client.release(error)
            leaveLane()
            if (error) reject(error)
            else resolve(value as T)
          }
          const onError = (error: Error): void => end(error)
          client.on('error', onError)
          timer = setTimeout(() => end(new QueryTimeoutError('query', deadlines.queryMs)), deadlines.queryMs)
          run(client).then(
            (value) => end(undefined, value),
            (error: unknown) => end(error instanceof Error ? error : new Error(String(error))),
          )
        },
        (error: unknown) => {
          leaveLane()
          if (over) return
          over = true
          clearTimeout(timer)
          reject(error)
        },
      )
    }
    if (lane === undefined) start()
    else if (lane.enter()) {
      inLane = true
      start()
    } else {
      leaveQueue = lane.queue(() => {
        leaveQueue = undefined
        inLane = true
        start()
      })
    }
  })
}

/**
 * A share of the pool's connections: at most `limit` statements of the lane hold a connection or
 * wait for one, the others wait here, in order (onConnection). The store's new work (claims,
 * purges) goes through one that leaves connections to the records of events already handled
 * (complete, release): after a silence, a burst of retried deliveries would otherwise queue ahead
 * of them in the pool, and a handled event's record could wait past its lease, when another
 * instance runs it again.
 */
export class Lane {
  readonly #limit: number
  #inside = 0
  readonly #waiting: Array<() => void> = []

  constructor(limit: number) {
    this.#limit = limit
  }

  /** Takes a place if one is free. */
  enter(): boolean {
    if (this.#inside >= this.#limit) return false
    this.#inside++
    return true
  }

  /** Waits for a place: `entered` runs once one is handed over. Returns the way out of the queue. */
  queue(entered: () => void): () => void {
    this.#waiting.push(entered)
    return () => {
      const at = this.#waiting.indexOf(entered)
      if (at >= 0) this.#waiting.splice(at, 1)
    }
  }

  /** Gives a place back: to the first caller waiting, else free. */
  leave(): void {
    const next = this.#waiting.shift()
    if (next) next()
    else this.#inside--
  }
}
