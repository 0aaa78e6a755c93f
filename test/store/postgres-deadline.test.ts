// The PostgreSQL store's two deadlines of one statement (store/postgres/deadline.ts): a connection
// must come within the connect wait, and the statement then has its whole query deadline from when
// it is sent. Before, one timer covered both: a statement sent after a long wait for a connection
// was cut off after the server ran it (a claim taking a lease nobody held, a complete that landed
// unknown). And the lane that keeps connections for the records of handled events: new work
// (claims, purges) holds or waits for at most its share. Fake time: only the order of events is asserted.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  connectWaitMs,
  Lane,
  onConnection,
  type PostgresPoolClient,
  QueryTimeoutError,
} from '../../packages/core/src/store/postgres/deadline.js'

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

/** A checked-out connection whose statement answers after `answerMs` (never, when undefined). */
function client(answerMs: number | undefined) {
  const released: Array<Error | boolean | undefined> = []
  const sent: number[] = []
  const c: PostgresPoolClient = {
    query: () => {
      sent.push(Date.now())
      return new Promise((resolve) => {
        if (answerMs !== undefined) setTimeout(() => resolve({ rows: [], rowCount: 1 }), answerMs)
      })
    },
    release: (destroy) => void released.push(destroy),
    on: () => c,
    removeListener: () => c,
  }
  return { c, released, sent }
}

/** A pool whose connection comes after `afterMs`. */
const connectAfter = (afterMs: number, c: PostgresPoolClient) => () =>
  new Promise<PostgresPoolClient>((resolve) => setTimeout(() => resolve(c), afterMs))

/** How the call ended and when (fake ms from its start). */
async function settle(promise: Promise<unknown>): Promise<{ at: number; value?: unknown; error?: unknown }> {
  const started = Date.now()
  let outcome: { at: number; value?: unknown; error?: unknown } | undefined
  promise.then(
    (value) => {
      outcome = { at: Date.now() - started, value }
    },
    (error: unknown) => {
      outcome = { at: Date.now() - started, error }
    },
  )
  for (let i = 0; i < 1_000 && outcome === undefined; i++) await vi.advanceTimersByTimeAsync(10)
  if (outcome === undefined) throw new Error('the call never settled')
  return outcome
}

const deadlines = { connectMs: 1_500, queryMs: 3_000 }

describe('onConnection: a wait for a connection, then a statement deadline from when it is sent', () => {
  it('the connect wait is half queryTimeoutMs (at least 1 ms)', () => {
    expect(connectWaitMs(3_000)).toBe(1_500)
    expect(connectWaitMs(1_001)).toBe(501)
    expect(connectWaitMs(1)).toBe(1)
  })

  it('a statement sent after a long wait for a connection gets its whole deadline: it answers (one timer for both would have cut it off)', async () => {
    const { c, released, sent } = client(2_500)
    const outcome = await settle(onConnection(connectAfter(1_400, c), deadlines, (conn) => conn.query('SELECT 1')))
    expect(outcome.error).toBeUndefined()
    expect(outcome.value).toEqual({ rows: [], rowCount: 1 })
    expect(outcome.at).toBeGreaterThanOrEqual(3_900)
    expect(sent).toHaveLength(1)
    // Back to the pool, kept.
    expect(released).toEqual([undefined])
  })

  it('no connection within the connect wait: fails then, and the connection that comes later is given back unused, its statement never sent', async () => {
    const { c, released, sent } = client(10)
    const outcome = await settle(onConnection(connectAfter(2_000, c), deadlines, (conn) => conn.query('SELECT 1')))
    expect(outcome.error).toBeInstanceOf(QueryTimeoutError)
    expect(outcome.error).toMatchObject({ step: 'connect', timeoutMs: 1_500 })
    expect((outcome.error as Error).message).toMatch(/no free connection within 1500 ms/)
    expect(outcome.at).toBeGreaterThanOrEqual(1_500)
    expect(outcome.at).toBeLessThan(2_000)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(sent).toEqual([])
    expect(released).toEqual([undefined])
  })

  it('a statement with no answer fails queryMs after it was sent, and its connection is destroyed', async () => {
    const { c, released } = client(undefined)
    const outcome = await settle(onConnection(connectAfter(1_000, c), deadlines, (conn) => conn.query('SELECT 1')))
    expect(outcome.error).toMatchObject({ step: 'query', timeoutMs: 3_000 })
    expect(outcome.at).toBeGreaterThanOrEqual(4_000)
    expect(released).toHaveLength(1)
    expect(released[0]).toBeInstanceOf(QueryTimeoutError)
  })
})

describe('Lane: new work’s share of the pool', () => {
  /** A pool whose connects resolve (or fail) when the test says. */
  function pool() {
    const pending: Array<{ resolve: (c: PostgresPoolClient) => void; reject: (error: Error) => void }> = []
    const connect = () => new Promise<PostgresPoolClient>((resolve, reject) => pending.push({ resolve, reject }))
    const make = (name: string): PostgresPoolClient => {
      const c: PostgresPoolClient = {
        query: async () => name,
        release: () => {},
        on: () => c,
        removeListener: () => c,
      }
      return c
    }
    return { connect, pending, make }
  }

  it('lets `limit` callers through, queues the next in order, and a released connection lets the next one in', async () => {
    const lane = new Lane(2)
    const p = pool()
    const signal = new AbortController().signal
    const order: string[] = []
    const calls = ['a', 'b', 'c', 'd'].map((name) =>
      lane.through(p.connect, signal).then((c) => {
        order.push(name)
        return c
      }),
    )
    await vi.advanceTimersByTimeAsync(0)
    // Only two asked the pool for a connection.
    expect(p.pending).toHaveLength(2)
    for (const [i, { resolve }] of p.pending.splice(0).entries()) resolve(p.make(`c${i}`))
    const [a] = await Promise.all([calls[0], calls[1]])
    expect(order).toEqual(['a', 'b'])
    a?.release()
    a?.release()
    await vi.advanceTimersByTimeAsync(0)
    // One place freed (a second release of the same connection frees nothing more): c asks, not d.
    expect(p.pending).toHaveLength(1)
    p.pending.shift()?.resolve(p.make('c2'))
    await calls[2]
    expect(order).toEqual(['a', 'b', 'c'])
    expect(p.pending).toHaveLength(0)
  })

  it('a caller whose signal aborts while it waits leaves the queue without taking a place; a failed connect frees its place', async () => {
    const lane = new Lane(1)
    const p = pool()
    const first = lane.through(p.connect, new AbortController().signal)
    const giveUp = new AbortController()
    const second = lane.through(p.connect, giveUp.signal)
    const third = lane.through(p.connect, new AbortController().signal)
    await vi.advanceTimersByTimeAsync(0)
    giveUp.abort(new Error('connect deadline'))
    await expect(second).rejects.toThrow('connect deadline')
    // The first's connect fails: its place passes to the third, not to the one that gave up.
    p.pending.shift()?.reject(new Error('connection refused'))
    await expect(first).rejects.toThrow('connection refused')
    await vi.advanceTimersByTimeAsync(0)
    expect(p.pending).toHaveLength(1)
    p.pending.shift()?.resolve(p.make('third'))
    const c = await third
    expect(await c.query('SELECT 1')).toBe('third')
    // Its release frees the place: the next caller goes straight to the pool.
    c.release()
    void lane.through(p.connect, new AbortController().signal)
    await vi.advanceTimersByTimeAsync(0)
    expect(p.pending).toHaveLength(1)
  })
})
