// The PostgreSQL store's background purge is paced (issue 48): after each full batch it pauses as
// long as that batch took, so a backlog of expired rows is deleted on at most half of one
// connection's time; it still goes on until a batch comes back short. `purgeExpired()` (scripts,
// tests) is not paced. No speed is asserted: only the order of batches and pauses.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { purgeAll } from '../../packages/core/src/store/postgres/purge.js'

afterEach(() => {
  vi.useRealTimers()
})

/** A purge statement that deletes `counts` rows in turn, each batch "taking" `ms` of fake time. */
function batches(counts: number[], ms: number) {
  const calls: string[] = []
  let i = 0
  const run = async (step: string) => {
    calls.push(step)
    vi.advanceTimersByTime(ms)
    return counts[i++] ?? 0
  }
  return { run, calls }
}

describe('purgeAll', () => {
  it('paced: pauses after each full batch as long as it took, and stops at a short batch', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'performance'] })
    const { run, calls } = batches([1000, 1000, 20, 0], 30)
    const done = purgeAll(['a', 'b'], run, () => false, true)
    await vi.advanceTimersByTimeAsync(0)
    expect(calls).toEqual(['a']) // the first batch ran; its pause (30 ms) has not ended
    await vi.advanceTimersByTimeAsync(29)
    expect(calls).toEqual(['a'])
    await vi.advanceTimersByTimeAsync(1)
    expect(calls).toEqual(['a', 'a'])
    await vi.advanceTimersByTimeAsync(30)
    expect(calls).toEqual(['a', 'a', 'a', 'b']) // the short third batch ends step a at once; b's first is short too
    expect(await done).toBe(2020)
  })

  it('not paced: batch after batch with no pause; stops when stopped', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'performance'] })
    const { run, calls } = batches([1000, 1000, 1000, 5], 30)
    expect(await purgeAll(['a'], run, () => false)).toBe(3005)
    expect(calls).toHaveLength(4)
    let stop = false
    const second = batches([1000, 1000, 1000], 30)
    const total = await purgeAll(
      ['a'],
      async (step) => {
        const n = await second.run(step)
        stop = true
        return n
      },
      () => stop,
      true,
    )
    expect(total).toBe(1000)
    expect(second.calls).toHaveLength(1)
  })
})
