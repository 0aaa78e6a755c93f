/**
 * The receiver's deadlines (one timer, a list of watches): many requests at once, whose steps end
 * in any order, some by their deadline and some before it. Each request that outlasts its
 * deadline is answered at it (plus at most a tick), wherever its watch sits in the list; each one
 * that ends first is answered as if there were no deadline; a watch removed early never fires.
 */
import { type ClaimOptions, createReceiver, type DedupStore, MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'
import { scaled } from '../support/time.js'

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

describe('receiver deadlines, many at once', () => {
  it('answers each hung handler at its deadline and each finished one with 200, in any order of start and end', async () => {
    const handlerTimeoutMs = 400
    let runs = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      handlerTimeoutMs,
      leaseMs: 5_000,
      handlers: {
        // The event id decides: `…_hang` never settles, `…_<ms>` ends after that many ms.
        'email.queued': async (event) => {
          runs++
          const plan = event.id.split('_').at(-1) as string
          if (plan === 'hang') await new Promise(() => {})
          const ms = Number(plan)
          await sleep(ms)
        },
      },
    })
    // 40 requests, started 0–40 ms apart; every third hangs, the others end after 0–300 ms (inside the deadline).
    const plans = Array.from({ length: 40 }, (_, i) => ({ hang: i % 3 === 1, ms: (i * 37) % 300, startAt: (i * 13) % 41 }))
    const deliveries = await Promise.all(
      plans.map((plan, i) => createSignedDelivery({ type: 'email.queued', id: `evt_deadlines_${i}_${plan.hang ? 'hang' : plan.ms}` })),
    )
    const answers = await Promise.all(
      plans.map(async (plan, i) => {
        await sleep(plan.startAt)
        const started = performance.now()
        const answer = await receiver.receive(deliveries[i] as (typeof deliveries)[number])
        return { answer, tookMs: performance.now() - started }
      }),
    )
    expect(runs).toBe(40)
    for (const [i, plan] of plans.entries()) {
      const { answer, tookMs } = answers[i] as (typeof answers)[number]
      if (plan.hang) {
        expect(answer).toMatchObject({ code: 'handler_timeout', outcome: 'retry' })
        // At the deadline, not before it; late by at most a tick and a loaded machine's delay.
        expect(tookMs).toBeGreaterThanOrEqual(handlerTimeoutMs - 5)
        expect(tookMs).toBeLessThan(handlerTimeoutMs + scaled(2_000))
      } else {
        expect(answer.status).toBe(200)
      }
    }
  })

  it('never fires a store step’s deadline after the step answered, and fires it for one that hangs among many that answer', async () => {
    const inner = new MemoryDedupStore()
    // Claims of events whose id ends in "hang" never answer; the others answer after 0–60 ms.
    let delay = 0
    const store: DedupStore = {
      claim: async (key: string, opts: ClaimOptions) => {
        if (key.endsWith('hang')) return new Promise(() => {})
        delay = (delay + 17) % 61
        await sleep(delay)
        return inner.claim(key, opts)
      },
      complete: (claim, opts) => inner.complete(claim, opts),
      release: (claim) => inner.release(claim),
    }
    const receiver = createReceiver({ secret: TEST_SECRET, store, storeTimeoutMs: 300, handlers: { 'email.submitted': async () => {} } })
    const ids = Array.from({ length: 30 }, (_, i) => `evt_deadline_${i}${i % 5 === 2 ? '_hang' : ''}`)
    const answers = await Promise.all(ids.map(async (id) => receiver.receive(await createSignedDelivery({ id, type: 'email.submitted' }))))
    for (const [i, id] of ids.entries()) {
      const answer = answers[i] as (typeof answers)[number]
      if (id.endsWith('hang')) expect([answer.status, answer.code]).toEqual([503, 'store_unavailable'])
      else expect(answer.status).toBe(200)
    }
  })
})
