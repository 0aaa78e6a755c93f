// pgBossWork's batches against a real PostgreSQL (test/queues/pg-boss-harness.ts): pg-boss hands the
// handler several jobs at once, and each job of a batch is settled on its own: one that throws is
// failed and retried alone, one that can never be processed is cancelled alone, and one whose event
// is held elsewhere waits without holding back the others.
import { createInboxProcessor, type EmailEventHandlers, type InboxItem } from '@email-webhooks/core'
import type { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery } from '@email-webhooks/core/testing'
import { pgBossJobId, pgBossWork } from '@email-webhooks/pg-boss'
import type PgBoss from 'pg-boss'
import { describe, expect, it } from 'vitest'
import { pgBossHarness } from './pg-boss-harness.js'
import { post, waitFor } from './support.js'

const { setup } = pgBossHarness()

/**
 * `pgBossWork` over `boss` wrapped so that each call of the batch handler is recorded (the ids it
 * was handed); stopped with `boss.offWork` by the returned function.
 */
async function startBatchWorker(
  boss: PgBoss,
  name: string,
  store: SqliteDedupStore,
  handlers: EmailEventHandlers,
  options: { batchSize?: number } = {},
) {
  const batches: string[][] = []
  const recording = {
    work: ((queue: string, workOptions: PgBoss.WorkOptions, handler: PgBoss.WorkHandler<InboxItem>) =>
      boss.work<InboxItem>(queue, workOptions, async (jobs) => {
        batches.push(jobs.map((job) => job.id))
        return handler(jobs)
      })) as PgBoss['work'],
    complete: boss.complete.bind(boss),
    cancel: boss.cancel.bind(boss),
  }
  const processor = createInboxProcessor({ handlers, store, logger: false })
  const id = await pgBossWork(recording, name, processor, { pollingIntervalSeconds: 0.5, ...options })
  return { batches, stop: () => boss.offWork({ id }) }
}

/** Queues `count` email.bounced deliveries through the receiver; their job ids, in the order queued. */
async function queueBounces(url: string, count: number): Promise<{ ids: string[]; eventIds: string[] }> {
  const ids: string[] = []
  const eventIds: string[] = []
  for (let i = 0; i < count; i++) {
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    ids.push(pgBossJobId(`default:${delivery.event.id}`))
    eventIds.push(delivery.event.id)
  }
  return { ids, eventIds }
}

const stateOf = async (boss: PgBoss, name: string, id: string) => (await boss.getJobById(name, id))?.state

describe('pgBossWork batches', () => {
  it('hands the handler several jobs in one call, batchSize at most, and completes each with its own output', async () => {
    const { name, boss, store, url } = await setup()
    const { ids } = await queueBounces(url, 12)
    const ran: string[] = []
    const worker = await startBatchWorker(
      boss,
      name,
      store,
      { 'email.bounced': async (event) => void ran.push(event.id) },
      { batchSize: 5 },
    )
    try {
      const jobs = await waitFor('every job to complete', async () => {
        const found = await Promise.all(ids.map((id) => boss.getJobById<InboxItem>(name, id)))
        return found.every((job) => job?.state === 'completed') ? found : undefined
      })
      expect(jobs.map((job) => job?.output)).toEqual(Array(12).fill({ value: 'handled' }))
      expect(new Set(ran).size).toBe(12)
      expect(ran).toHaveLength(12)
      // Queued before the worker started: the first fetch takes a full batch.
      expect(worker.batches[0]).toHaveLength(5)
      expect(Math.max(...worker.batches.map((batch) => batch.length))).toBe(5)
      expect(worker.batches.flat().sort()).toEqual([...ids].sort())
    } finally {
      await worker.stop()
    }
  })

  it('fails and retries only the job whose handler throws; the others of its batch complete once', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryLimit: 1, retryDelay: 1, retryBackoff: false } } })
    const { ids, eventIds } = await queueBounces(url, 5)
    const failing = eventIds[2]
    const runs = new Map<string, number>()
    const worker = await startBatchWorker(boss, name, store, {
      'email.bounced': async (event) => {
        runs.set(event.id, (runs.get(event.id) ?? 0) + 1)
        if (event.id === failing) throw new Error('the mail database is down')
      },
    })
    try {
      const failedJob = await waitFor('the throwing job to fail for good', async () => {
        const job = await boss.getJobById(name, ids[2] ?? '')
        return job?.state === 'failed' ? job : undefined
      })
      expect(failedJob.retryCount).toBe(1)
      // Core's error for a handler that threw (the handler's own is logged by the processor).
      expect(failedJob.output).toMatchObject({ code: 'handler_failed', message: expect.stringContaining(failing ?? '') })
      expect(worker.batches[0]).toHaveLength(5)
      for (const i of [0, 1, 3, 4]) {
        const job = await boss.getJobById(name, ids[i] ?? '')
        expect({ state: job?.state, output: job?.output, retries: job?.retryCount }).toEqual({
          state: 'completed',
          output: { value: 'handled' },
          retries: 0,
        })
        expect(runs.get(eventIds[i] ?? '')).toBe(1)
      }
      expect(runs.get(failing ?? '')).toBe(2)
    } finally {
      await worker.stop()
    }
  })

  it('gives each failed job of a batch its own error when several fail', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryLimit: 0 } } })
    const { ids, eventIds } = await queueBounces(url, 4)
    const worker = await startBatchWorker(boss, name, store, {
      'email.bounced': async (event) => {
        if (event.id === eventIds[0] || event.id === eventIds[3]) throw new Error(`no mailbox for ${event.id}`)
      },
    })
    try {
      const outputs = await waitFor('the two throwing jobs to fail', async () => {
        const found = await Promise.all([ids[0], ids[3]].map((id) => boss.getJobById(name, id ?? '')))
        return found.every((job) => job?.state === 'failed') ? found.map((job) => job?.output) : undefined
      })
      for (const [i, output] of [0, 3].map((i, n) => [i, outputs[n]] as const)) {
        const jobs = (output as { name?: string; jobs?: Record<string, { code?: string; message?: string }> }).jobs
        expect((output as { name?: string }).name).toBe('PgBossBatchError')
        // Each job's own error (core's, for a handler that threw), under its id.
        expect(jobs?.[ids[i] ?? '']).toMatchObject({ code: 'handler_failed', message: expect.stringContaining(eventIds[i] ?? '') })
        expect(Object.keys(jobs ?? {}).sort()).toEqual([ids[0], ids[3]].sort())
      }
      expect(await Promise.all([ids[1], ids[2]].map((id) => stateOf(boss, name, id ?? '')))).toEqual(['completed', 'completed'])
    } finally {
      await worker.stop()
    }
  })

  it('cancels a job of another namespace in a batch, and completes the others', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryDelay: 1, retryBackoff: false } } })
    const { ids } = await queueBounces(url, 2)
    const stray = await createSignedDelivery({ type: 'email.bounced' })
    const strayId =
      (await boss.send(
        name,
        { key: `shop:${stray.event.id}`, type: 'email.bounced', payload: stray.body, timestamp: 1 },
        { retryLimit: 5, retryDelay: 1 },
      )) ?? ''
    ids.push(...(await queueBounces(url, 2)).ids)
    const ran: string[] = []
    const worker = await startBatchWorker(boss, name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    try {
      const cancelled = await waitFor('the stray job to be cancelled', async () => {
        const job = await boss.getJobById(name, strayId)
        return job?.state === 'cancelled' ? job : undefined
      })
      expect(cancelled.retryCount).toBe(0)
      await waitFor('the others to complete', async () =>
        (await Promise.all(ids.map((id) => stateOf(boss, name, id)))).every((state) => state === 'completed') ? true : undefined,
      )
      expect(worker.batches[0]).toHaveLength(5)
      expect(ran).toHaveLength(4)
      expect(ran).not.toContain(stray.event.id)
    } finally {
      await worker.stop()
    }
  })

  it('completes the other jobs of a batch while one waits for its event held elsewhere', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryLimit: 1, retryDelay: 1, retryBackoff: false } } })
    const held = await createSignedDelivery({ type: 'email.bounced' })
    // A consumer that claimed the event and died: its lease is never renewed, nor completed.
    expect((await store.claim(`default:${held.event.id}`, { leaseMs: 8_000, retentionMs: 3_600_000 })).status).toBe('acquired')
    expect((await post(url, held)).json).toEqual({ ok: true, queued: true })
    const heldId = pgBossJobId(`default:${held.event.id}`)
    const { ids } = await queueBounces(url, 4)
    const ran: string[] = []
    const worker = await startBatchWorker(boss, name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    try {
      await waitFor('the other jobs to complete', async () =>
        (await Promise.all(ids.map((id) => stateOf(boss, name, id)))).every((state) => state === 'completed') ? true : undefined,
      )
      // The held job is still waiting in the worker, in the same batch as the others.
      expect(await stateOf(boss, name, heldId)).toBe('active')
      expect(worker.batches[0]).toHaveLength(5)
      expect(ran).not.toContain(held.event.id)
      const job = await waitFor(
        'the held job to complete once the lease lapsed',
        async () => {
          const found = await boss.getJobById(name, heldId)
          return found?.state === 'completed' ? found : undefined
        },
        25_000,
      )
      expect({ output: job.output, retries: job.retryCount }).toEqual({ output: { value: 'handled' }, retries: 0 })
      expect(ran.filter((id) => id === held.event.id)).toHaveLength(1)
    } finally {
      await worker.stop()
    }
  }, 40_000)

  it('refuses a batchSize that is not a whole number ≥ 1', () => {
    const processor = { process: async () => 'handled' as const }
    const boss = { work: async () => 'id', complete: async () => undefined, cancel: async () => undefined } as unknown as PgBoss
    expect(() => pgBossWork(boss, 'q', processor, { batchSize: 0 })).toThrow(/batchSize/)
    expect(() => pgBossWork(boss, 'q', processor, { batchSize: 1.5 })).toThrow(/batchSize/)
  })
})
