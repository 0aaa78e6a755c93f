// bullmqSink against a real Redis (test/queues/bullmq-harness.ts): the answer waits for the job, one
// job per event however often or however concurrently it is delivered, completed jobs kept retentionMs.
import { BULLMQ_JOB_DEFAULTS, bullmqJobId, bullmqSink } from '@email-webhooks/bullmq'
import type { InboxItem } from '@email-webhooks/core'
import { createSignedDelivery } from '@email-webhooks/core/testing'
import type { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import { describe, expect, it, vi } from 'vitest'
import { bullmqHarness } from './bullmq-harness.js'
import { gate, post, race, waitFor } from './support.js'

const { setup, startWorker } = bullmqHarness()

describe('bullmqSink', () => {
  it('answers 200 queued only once the job is in Redis; a redelivery makes no second job and answers duplicate', async () => {
    const held = gate()
    let added = false
    // storeTimeoutMs 5 s: the 300 ms hold and the add after it stay well within it on a loaded machine.
    const { queue, url } = await setup(
      {},
      (queue) => ({
        name: queue.name,
        defaultJobOptions: queue.defaultJobOptions,
        getJob: (id: string) => queue.getJob(id),
        client: queue.client,
        add: (async (...args: Parameters<Queue['add']>) => {
          await held.promise
          const job = await queue.add(...args)
          added = true
          return job
        }) as Queue['add'],
      }),
      5_000,
    )
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    let answered = false
    const answer = post(url, delivery).finally(() => {
      answered = true
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(answered).toBe(false)
    held.open()
    const first = await answer
    expect(added).toBe(true)
    expect(first).toMatchObject({ status: 200, json: { ok: true, queued: true } })
    const jobId = bullmqJobId(`default:${delivery.event.id}`)
    const job = await queue.getJob(jobId)
    expect(job?.name).toBe('email.bounced')
    expect((job?.data as InboxItem | undefined)?.payload).toBe(delivery.body)
    expect(job?.opts).toMatchObject({ attempts: BULLMQ_JOB_DEFAULTS.attempts, removeOnComplete: { age: 7 * 24 * 3600 } })

    const again = await createSignedDelivery({ event: delivery.event, timestamp: Math.floor(Date.now() / 1000) + 1 })
    expect(await post(url, again)).toMatchObject({ status: 200, json: { ok: true, duplicate: true } })
    expect(await queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed')).toMatchObject({
      waiting: 1,
      active: 0,
      completed: 0,
      failed: 0,
      delayed: 0,
    })
  })

  it('tells a duplicate from a new job when two deliveries of one event race (one job)', async () => {
    const { queue, url } = await setup()
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const answers = await race(url, delivery)
    expect(answers.map((a) => [a.status, a.json])).toEqual(Array(6).fill([200, expect.anything()]))
    // One answer says queued, the others duplicate (none when the enqueue that made the job was
    // answered 503 for its slowness and its retry found the job).
    expect(answers.filter((a) => (a.json as { queued?: boolean }).queued === true).length).toBeLessThanOrEqual(1)
    expect(answers.filter((a) => (a.json as { duplicate?: boolean }).duplicate === true).length).toBeGreaterThanOrEqual(5)
    expect(await queue.count()).toBe(1)
  })

  it('keeps a completed job retentionMs, so a redelivery after the handler ran is still a duplicate', async () => {
    const { name, queue, store, url } = await setup()
    const ran: string[] = []
    startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    const jobId = bullmqJobId(`default:${delivery.event.id}`)
    await waitFor('the job to complete', async () => ((await queue.getJob(jobId))?.finishedOn ? true : undefined))
    expect(await post(url, delivery)).toMatchObject({ status: 200, json: { ok: true, duplicate: true } })
    expect(ran).toEqual([delivery.event.id])
    expect(await (await queue.getJob(jobId))?.getState()).toBe('completed')
  })

  it('encodes keys into legal, distinct BullMQ job ids (a namespace or an event id with ":" or "%")', async () => {
    const { queue } = await setup()
    const sink = bullmqSink(queue)
    const item = (key: string): InboxItem => ({ key, type: 'email.bounced', payload: '{}', timestamp: 1 })
    const keys = ['acme:prod:evt_1', 'acme%3Aprod:evt_1', 'acme:prod%3Aevt_1', 'default:12345', 'default:a:b:c']
    for (const key of keys) expect(await sink.enqueue(item(key), { retentionMs: 60_000 })).toBe('queued')
    const ids = keys.map(bullmqJobId)
    expect(new Set(ids).size).toBe(keys.length)
    expect(ids.filter((id) => id.includes(':'))).toEqual([])
    expect(ids[0]).toBe('ewh-acme%3Aprod%3Aevt_1')
    for (const [i, id] of ids.entries()) expect(((await queue.getJob(id))?.data as InboxItem | undefined)?.key).toBe(keys[i])
    for (const key of keys) expect(await sink.enqueue(item(key), { retentionMs: 60_000 })).toBe('duplicate')
    expect(await queue.count()).toBe(keys.length)
  })

  it('refuses every delivery (503, nothing acknowledged) while the queue’s Redis can lose events, says so at start-up, and queues once it is fixed', async () => {
    const { queue } = await setup()
    const client = (await queue.client) as unknown as Redis
    await client.config('SET', 'appendonly', 'no')
    try {
      const warn = vi.fn<(line: string) => void>()
      const { url } = await setup({ warn })
      await vi.waitFor(() => expect(warn).toHaveBeenCalled())
      expect(warn.mock.calls[0]?.[0]).toMatch(
        /the Redis of BullMQ queue hooks-\d+ can lose completed events: appendonly is no \(set appendonly yes\).*Every delivery is refused \(503\)/,
      )
      const refused = await post(url, await createSignedDelivery({ type: 'email.bounced' }))
      expect(refused.status).toBe(503)
      expect(refused.json).toMatchObject({ error: { code: 'store_unavailable' } })
      await client.config('SET', 'appendonly', 'yes')
      expect((await post(url, await createSignedDelivery({ type: 'email.bounced' }))).json).toEqual({ ok: true, queued: true })
    } finally {
      await client.config('SET', 'appendonly', 'yes')
    }
  })

  it('queues on such a Redis with checkDurability: false, having said at start-up what that risks', async () => {
    const { queue } = await setup()
    const client = (await queue.client) as unknown as Redis
    await client.config('SET', 'appendfsync', 'everysec')
    try {
      const warn = vi.fn<(line: string) => void>()
      const { url } = await setup({ checkDurability: false, warn })
      expect(warn.mock.calls.map(([line]) => line)).toEqual([
        expect.stringMatching(
          /checkDurability is false, so the Redis of BullMQ queue .* is not checked: .*a restart loses events the receiver acknowledged/,
        ),
      ])
      expect((await post(url, await createSignedDelivery({ type: 'email.bounced' }))).json).toEqual({ ok: true, queued: true })
    } finally {
      await client.config('SET', 'appendfsync', 'always')
    }
  })

  it('refuses what is not a BullMQ queue', () => {
    expect(() => bullmqSink({} as Queue)).toThrow(/needs a BullMQ Queue/)
  })
})
