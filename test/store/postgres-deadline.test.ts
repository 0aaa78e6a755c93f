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
import { newWorkLimit } from '../../packages/core/src/store/postgres/options.js'

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
  /** A pool whose connects resolve (or fail) when the test says; each connection answers its name. */
  function pool() {
    const pending: Array<{ resolve: (c: PostgresPoolClient) => void; reject: (error: Error) => void }> = []
    const released: string[] = []
    const connect = () => new Promise<PostgresPoolClient>((resolve, reject) => pending.push({ resolve, reject }))
    const make = (name: string, answerMs = 0): PostgresPoolClient => {
      const c: PostgresPoolClient = {
        query: () => new Promise((resolve) => setTimeout(() => resolve(name), answerMs)),
        release: () => void released.push(name),
        on: () => c,
        removeListener: () => c,
      }
      return c
    }
    return { connect, pending, released, make }
  }
  const statement = (c: PostgresPoolClient) => c.query('SELECT 1')

  it('lets `limit` calls ask the pool, queues the next in order, and a released connection lets the next one in', async () => {
    const lane = new Lane(2)
    const p = pool()
    const calls = ['a', 'b', 'c', 'd'].map(() => onConnection(p.connect, deadlines, statement, lane))
    await vi.advanceTimersByTimeAsync(0)
    // Only two asked the pool for a connection.
    expect(p.pending).toHaveLength(2)
    p.pending.shift()?.resolve(p.make('a', 100))
    p.pending.shift()?.resolve(p.make('b', 500))
    await vi.advanceTimersByTimeAsync(100)
    expect(await calls[0]).toBe('a')
    // a's connection went back: c asks the pool, d still waits.
    expect(p.released).toEqual(['a'])
    expect(p.pending).toHaveLength(1)
    p.pending.shift()?.resolve(p.make('c'))
    await vi.advanceTimersByTimeAsync(0)
    expect(await calls[2]).toBe('c')
    p.pending.shift()?.resolve(p.make('d'))
    await vi.advanceTimersByTimeAsync(500)
    expect(await Promise.all(calls)).toEqual(['a', 'b', 'c', 'd'])
    // Every place given back: a new call goes straight to the pool.
    void onConnection(p.connect, deadlines, statement, lane)
    void onConnection(p.connect, deadlines, statement, lane)
    await vi.advanceTimersByTimeAsync(0)
    expect(p.pending).toHaveLength(2)
  })

  it('a call that waits in the lane past the connect wait fails without taking a place; a connect that fails, even late, gives its place on', async () => {
    const lane = new Lane(1)
    const p = pool()
    const first = onConnection(p.connect, deadlines, statement, lane)
    const second = onConnection(p.connect, deadlines, statement, lane)
    first.catch(() => {})
    second.catch(() => {})
    await vi.advanceTimersByTimeAsync(1_000)
    const third = onConnection(p.connect, deadlines, statement, lane)
    await vi.advanceTimersByTimeAsync(600)
    // Both waits of the first two are over: the first's connection never came, the second waited in the lane.
    await expect(first).rejects.toMatchObject({ step: 'connect' })
    await expect(second).rejects.toMatchObject({ step: 'connect' })
    expect(p.pending).toHaveLength(1)
    // The pool fails the first's connect at last: its place passes to the third, not to the second.
    p.pending.shift()?.reject(new Error('timeout exceeded when trying to connect'))
    await vi.advanceTimersByTimeAsync(0)
    expect(p.pending).toHaveLength(1)
    p.pending.shift()?.resolve(p.make('third'))
    await vi.advanceTimersByTimeAsync(0)
    expect(await third).toBe('third')
  })

  it('a connect that throws at once (pg builds the client synchronously) gives its place back', async () => {
    const lane = new Lane(1)
    const p = pool()
    const throwing = () => {
      throw new Error('ENOENT: no such file, open /certs/root.crt')
    }
    await expect(onConnection(throwing, deadlines, statement, lane)).rejects.toThrow('ENOENT')
    const next = onConnection(p.connect, deadlines, statement, lane)
    await vi.advanceTimersByTimeAsync(0)
    expect(p.pending).toHaveLength(1)
    p.pending.shift()?.resolve(p.make('next'))
    await vi.advanceTimersByTimeAsync(0)
    expect(await next).toBe('next')
  })

  it('keeps a quarter of the pool, at most two connections, for records; none below 4 or when the size is unknown', () => {
    expect(newWorkLimit(10)).toBe(8)
    expect(newWorkLimit(20)).toBe(18)
    expect(newWorkLimit(4)).toBe(3)
    expect(newWorkLimit(7)).toBe(6)
    expect(newWorkLimit(3)).toBeUndefined()
    expect(newWorkLimit(undefined)).toBeUndefined()
  })
})
