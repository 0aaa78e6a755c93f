// @email-webhooks/pg-boss against a real PostgreSQL (test/queues/pg-boss-harness.ts): the answer waits
// for the job, one job per event, a missing queue is no duplicate, one handler run when a job runs
// twice, pg-boss retries a failing handler, and PostgreSQL unreachable answers 503 with nothing lost.
import type { InboxItem } from '@email-webhooks/core'
import { createSignedDelivery } from '@email-webhooks/core/testing'
import { PG_BOSS_JOB_DEFAULTS, pgBossJobId, pgBossSink } from '@email-webhooks/pg-boss'
import type PgBoss from 'pg-boss'
import { describe, expect, it } from 'vitest'
import { pgBossHarness } from './pg-boss-harness.js'
import { gate, post, race, waitFor } from './support.js'

const { setup, startWorker, proxy } = pgBossHarness()
const DAY_MS = 24 * 3600 * 1000

const done = (boss: PgBoss, name: string, id: string) =>
  waitFor(`job ${id} to complete`, async () => {
    const job = await boss.getJobById<InboxItem>(name, id)
    return job?.state === 'completed' ? job : undefined
  })

describe('pgBossSink', () => {
  it('answers 200 queued only once the job is committed; a redelivery makes no second job and answers duplicate', async () => {
    const held = gate()
    let sent = false
    // storeTimeoutMs 5 s: the 300 ms hold and the send after it stay well within it on a loaded machine.
    const { name, boss, url } = await setup({
      storeTimeoutMs: 5_000,
      wrap: (receiverBoss) => ({
        send: (async (...args: Parameters<PgBoss['send']>) => {
          await held.promise
          const id = await (receiverBoss.send as (...a: unknown[]) => Promise<string | null>)(...args)
          sent = true
          return id
        }) as PgBoss['send'],
        getJobById: receiverBoss.getJobById.bind(receiverBoss),
        retry: receiverBoss.retry.bind(receiverBoss),
      }),
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    let answered = false
    const answer = post(url, delivery).finally(() => {
      answered = true
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(answered).toBe(false)
    held.open()
    expect(await answer).toMatchObject({ status: 200, json: { ok: true, queued: true } })
    expect(sent).toBe(true)
    const id = pgBossJobId(`default:${delivery.event.id}`)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const job = await boss.getJobById<InboxItem>(name, id)
    expect(job?.data.payload).toBe(delivery.body)
    expect({ retryLimit: job?.retryLimit, retryBackoff: job?.retryBackoff }).toEqual({
      retryLimit: PG_BOSS_JOB_DEFAULTS.retryLimit,
      retryBackoff: true,
    })
    // It may wait at least retentionMs (7 days here) and pg-boss's own 14 days.
    expect(new Date(job?.keepUntil ?? 0).getTime()).toBeGreaterThan(Date.now() + 13 * DAY_MS)

    const again = await createSignedDelivery({ event: delivery.event, timestamp: Math.floor(Date.now() / 1000) + 1 })
    expect(await post(url, again)).toMatchObject({ status: 200, json: { ok: true, duplicate: true } })
    expect(await boss.getQueueSize(name)).toBe(1)
  })

  it('queues one job when deliveries of one event race, and answers the others duplicate', async () => {
    const { name, boss, url } = await setup()
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const answers = await race(url, delivery)
    expect(answers.map((a) => [a.status, a.json])).toEqual(Array(6).fill([200, expect.anything()]))
    // One answer says queued, the others duplicate (none when the enqueue that made the job was
    // answered 503 for its slowness and its retry found the job).
    expect(answers.filter((a) => (a.json as { queued?: boolean }).queued === true).length).toBeLessThanOrEqual(1)
    expect(answers.filter((a) => (a.json as { duplicate?: boolean }).duplicate === true).length).toBeGreaterThanOrEqual(5)
    expect(await boss.getQueueSize(name)).toBe(1)
  })

  it('answers 503 when the queue does not exist (pg-boss answers null as for a duplicate; nothing is acknowledged)', async () => {
    const { url } = await setup({ createQueue: false })
    const answer = await post(url, await createSignedDelivery({ type: 'email.bounced' }))
    expect(answer.status).toBe(503)
    expect(answer.json).toMatchObject({ error: { code: 'store_unavailable' } })
  })

  it('refuses what is not a PgBoss, and an empty queue name', () => {
    expect(() => pgBossSink({} as PgBoss, 'q')).toThrow(/needs a started PgBoss/)
    expect(() =>
      pgBossSink({ send: async () => null, getJobById: async () => null, retry: async () => undefined } as unknown as PgBoss, ''),
    ).toThrow(/queue name/)
  })
})

describe('pgBossWork', () => {
  it('runs the handler once when the same event is queued again under another job id', async () => {
    const { name, boss, store, url } = await setup()
    const ran: string[] = []
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    const id = pgBossJobId(`default:${delivery.event.id}`)
    const copy = await boss.send(name, (await boss.getJobById<InboxItem>(name, id))?.data ?? {}, { retryLimit: 5, retryDelay: 1 })
    await startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const outputs = [(await done(boss, name, id)).output, (await done(boss, name, copy ?? '')).output]
    expect(outputs.map((o) => (o as { value: unknown }).value).sort()).toEqual(['duplicate', 'handled'])
    expect(ran).toEqual([delivery.event.id])
  })

  it('runs the handler once when the first attempt fails after the handler succeeded', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryDelay: 1, retryBackoff: false } } })
    const ran: string[] = []
    const delivery = await createSignedDelivery({ type: 'email.complained' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    await startWorker(name, store, { 'email.complained': async (event) => void ran.push(event.id) }, async (run, attempt) => {
      const outcome = await run()
      if (attempt === 1) throw new Error('the worker died after the handler ran')
      return outcome
    })
    const job = await done(boss, name, pgBossJobId(`default:${delivery.event.id}`))
    expect({ output: job.output, retries: job.retryCount }).toEqual({ output: { value: 'duplicate' }, retries: 1 })
    expect(ran).toEqual([delivery.event.id])
  })

  it('cancels a job of another namespace instead of retrying it, and runs no handler', async () => {
    const { name, boss, store } = await setup({ sink: { sendOptions: { retryDelay: 1, retryBackoff: false } } })
    const ran: string[] = []
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const data = { key: `shop:${delivery.event.id}`, type: 'email.bounced', payload: delivery.body, timestamp: 1 }
    const id = (await boss.send(name, data, { retryLimit: 5, retryDelay: 1 })) ?? ''
    await startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const job = await waitFor('the job to be cancelled', async () => {
      const found = await boss.getJobById(name, id)
      return found?.state === 'cancelled' ? found : undefined
    })
    expect(job.retryCount).toBe(0)
    expect(ran).toEqual([])
  })

  it('waits in the worker while another consumer holds the event (a dead one, its lease live), instead of using a retry', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryLimit: 1, retryDelay: 1, retryBackoff: false } } })
    const ran: string[] = []
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    // A consumer that claimed the event and died: its 2 s lease is never renewed, nor completed.
    const held = await store.claim(`default:${delivery.event.id}`, { leaseMs: 2_000, retentionMs: 3_600_000 })
    expect(held.status).toBe('acquired')
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    await startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const job = await done(boss, name, pgBossJobId(`default:${delivery.event.id}`))
    expect({ output: job.output, retries: job.retryCount }).toEqual({ output: { value: 'handled' }, retries: 0 })
    expect(ran).toEqual([delivery.event.id])
  }, 30_000)

  it('runs a failed job again when its event is delivered again, rather than answering a duplicate', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryLimit: 0 } } })
    let down = true
    const ran: string[] = []
    await startWorker(name, store, {
      'email.bounced': async (event) => {
        if (down) throw new Error('the mail database is down')
        ran.push(event.id)
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    const id = pgBossJobId(`default:${delivery.event.id}`)
    await waitFor('the job to fail', async () => ((await boss.getJobById(name, id))?.state === 'failed' ? true : undefined))
    down = false
    const again = await createSignedDelivery({ event: delivery.event, timestamp: Math.floor(Date.now() / 1000) + 1 })
    expect((await post(url, again)).json).toEqual({ ok: true, queued: true })
    const job = await done(boss, name, id)
    expect(job.output).toEqual({ value: 'handled' })
    expect(ran).toEqual([delivery.event.id])
  }, 30_000)

  it('lets pg-boss retry a handler that throws until it succeeds', async () => {
    const { name, boss, store, url } = await setup({ sink: { sendOptions: { retryDelay: 1, retryBackoff: false } } })
    let tries = 0
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    await startWorker(name, store, {
      'email.bounced': async () => {
        if (++tries < 3) throw new Error('the mail database is down')
      },
    })
    const job = await done(boss, name, pgBossJobId(`default:${delivery.event.id}`))
    expect({ output: job.output, retries: job.retryCount, tries }).toEqual({ output: { value: 'handled' }, retries: 2, tries: 3 })
  })

  it('answers 503 store_unavailable while PostgreSQL is unreachable, and loses nothing once it is back', async () => {
    const { name, boss, store, url } = await setup()
    const ran: string[] = []
    await startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    proxy().down()
    const refused = await post(url, delivery)
    expect(refused.status).toBe(503)
    expect(refused.json).toMatchObject({ error: { code: 'store_unavailable' } })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    proxy().up()
    const retried = await waitFor('the queue to answer again', async () => {
      const again = await post(url, await createSignedDelivery({ event: delivery.event }))
      return again.status === 200 ? again : undefined
    })
    expect(retried.json).toMatchObject({ ok: true })
    await done(boss, name, pgBossJobId(`default:${delivery.event.id}`))
    expect(ran).toEqual([delivery.event.id])
  })
})
