// BullMQ Workers running bullmqProcessor(createInboxProcessor(…)) against a real Redis
// (test/queues/bullmq-harness.ts): one handler run per event when its job runs twice, a failing
// handler retried by BullMQ, and a queue that is down answered 503 with nothing lost once it is back.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bullmqJobId } from '@email-webhooks/bullmq'
import { createSignedDelivery } from '@email-webhooks/core/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { bullmqHarness } from './bullmq-harness.js'
import { post, waitFor } from './support.js'

const { setup, startWorker, proxy, redis } = bullmqHarness()
const CONSUMER = fileURLToPath(new URL('./bullmq-consumer.mjs', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'email-webhooks-bullmq-kill-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})
const FAST_RETRIES = { jobOptions: { attempts: 5, backoff: { type: 'exponential', delay: 50, jitter: 0.5 } } }

describe('bullmqProcessor in a BullMQ Worker', () => {
  it('runs the handler once when the same event is queued again under another job id (run at once: in_flight, retried)', async () => {
    const { name, queue, store, url } = await setup()
    const ran: string[] = []
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    const job = await queue.getJob(bullmqJobId(`default:${delivery.event.id}`))
    // Both jobs start together (concurrency 2): the one that finds the event held elsewhere throws
    // in_flight and BullMQ retries it, when the store answers duplicate.
    await queue.add('copy', job?.data, { jobId: 'a-copy-of-the-job', attempts: 5, backoff: { type: 'fixed', delay: 100 } })
    startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const results = await waitFor('both jobs to complete', async () => {
      const done = await queue.getCompleted()
      return done.length === 2 ? done.map((j) => j.returnvalue).sort() : undefined
    })
    expect(results).toEqual(['duplicate', 'handled'])
    expect(ran).toEqual([delivery.event.id])
  })

  it('runs the handler once when the first attempt fails after the handler succeeded (the retry is a duplicate)', async () => {
    const { name, queue, store, url } = await setup(FAST_RETRIES)
    const ran: string[] = []
    const delivery = await createSignedDelivery({ type: 'email.complained' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    startWorker(name, store, { 'email.complained': async (event) => void ran.push(event.id) }, async (run, attempt) => {
      const outcome = await run()
      if (attempt === 1) throw new Error('the worker died after the handler ran')
      return outcome
    })
    const job = await waitFor('the job to complete', async () => {
      const found = await queue.getJob(bullmqJobId(`default:${delivery.event.id}`))
      return found?.finishedOn ? found : undefined
    })
    expect({ returned: job.returnvalue, attempts: job.attemptsMade }).toEqual({ returned: 'duplicate', attempts: 2 })
    expect(ran).toEqual([delivery.event.id])
  })

  it('fails a job of another namespace at once (UnrecoverableError), using one attempt of five, and runs no handler', async () => {
    const { name, queue, store } = await setup()
    const ran: string[] = []
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const data = { key: `shop:${delivery.event.id}`, type: 'email.bounced', payload: delivery.body, timestamp: 1, enqueueId: 'x' }
    await queue.add('email.bounced', data, { jobId: 'other-namespace', attempts: 5, backoff: { type: 'fixed', delay: 50 } })
    startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const job = await waitFor('the job to fail', async () => {
      const found = await queue.getJob('other-namespace')
      return found?.finishedOn ? found : undefined
    })
    expect({ attempts: job.attemptsMade, failed: await job.isFailed() }).toEqual({ attempts: 1, failed: true })
    expect(job.failedReason).toMatch(/queued under namespace "shop", and this processor's namespace is "default"/)
    expect(ran).toEqual([])
  })

  it('completes the job of a consumer killed -9 mid-handler: every try while its lease lives is delayed, not an attempt (4 attempts, 200 ms backoff, a 3 s lease)', async () => {
    const { name, queue, store, db, url } = await setup({ jobOptions: { attempts: 4, backoff: { type: 'fixed', delay: 200 } } })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    const journal = join(scratch, `${name}.journal`)
    const consumer = spawn(process.execPath, [CONSUMER, JSON.stringify({ connection: redis(), name, db, journal, leaseMs: 3_000 })], {
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    children.push(consumer)
    // The line, not the file: the file exists a moment before its line is written (a kill between them left it empty once).
    await waitFor('the consumer to start the handler', () =>
      existsSync(journal) && readFileSync(journal, 'utf8').includes('start ') ? true : undefined,
    )
    consumer.kill('SIGKILL')
    // Another consumer: its stall check hands the dead consumer's job back within a second; the
    // event's claim lives on until the 3 s lease lapses.
    const ran: string[] = []
    startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) }, undefined, {
      lockDuration: 2_000,
      stalledInterval: 1_000,
    })
    const job = await waitFor('the job to finish', async () => {
      const found = await queue.getJob(bullmqJobId(`default:${delivery.event.id}`))
      return found?.finishedOn ? found : undefined
    })
    expect({ failed: job.failedReason, returned: job.returnvalue }).toEqual({ failed: undefined, returned: 'handled' })
    expect(job.attemptsMade).toBeLessThan(4)
    expect(ran).toEqual([delivery.event.id])
    expect(readFileSync(journal, 'utf8')).toBe(`start ${delivery.event.id}\n`)
  }, 30_000)

  it('runs a failed job again when its event is delivered again: a failed job is no record of the event, so not a duplicate', async () => {
    const { name, queue, store, url } = await setup({ jobOptions: { attempts: 1 } })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    let down = true
    const ran: string[] = []
    startWorker(name, store, {
      'email.bounced': async (event) => {
        if (down) throw new Error('the mail database is down')
        ran.push(event.id)
      },
    })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    const id = bullmqJobId(`default:${delivery.event.id}`)
    await waitFor('the job to fail', async () => ((await queue.getJob(id))?.failedReason ? true : undefined))
    down = false
    const again = await createSignedDelivery({ event: delivery.event, timestamp: Math.floor(Date.now() / 1000) + 1 })
    expect((await post(url, again)).json).toEqual({ ok: true, queued: true })
    const job = await waitFor('the job to complete', async () => {
      const found = await queue.getJob(id)
      return found?.returnvalue ? found : undefined
    })
    expect(job.returnvalue).toBe('handled')
    expect(ran).toEqual([delivery.event.id])
  })

  it('lets BullMQ retry a handler that throws, with backoff, until it succeeds', async () => {
    const { name, queue, store, url } = await setup(FAST_RETRIES)
    const tries: number[] = []
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await post(url, delivery)).json).toEqual({ ok: true, queued: true })
    startWorker(name, store, {
      'email.bounced': async () => {
        tries.push(Date.now())
        if (tries.length < 3) throw new Error('the mail database is down')
      },
    })
    const job = await waitFor('the job to complete', async () => {
      const found = await queue.getJob(bullmqJobId(`default:${delivery.event.id}`))
      return found?.finishedOn ? found : undefined
    })
    expect({ returned: job.returnvalue, attempts: job.attemptsMade, failed: job.failedReason }).toMatchObject({
      returned: 'handled',
      attempts: 3,
    })
    expect(tries).toHaveLength(3)
    // Exponential from 50 ms with 50 % jitter: the second wait is at least 50 ms (100 ms less half).
    expect((tries[2] ?? 0) - (tries[1] ?? 0)).toBeGreaterThanOrEqual(45)
  })

  it('answers 503 store_unavailable with Retry-After while Redis is unreachable, and loses nothing once it is back', async () => {
    const { name, queue, store, url } = await setup()
    const ran: string[] = []
    startWorker(name, store, { 'email.bounced': async (event) => void ran.push(event.id) })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    proxy().down()
    const refused = await post(url, delivery)
    expect(refused.status).toBe(503)
    expect((refused.json as { error: { code: string } }).error.code).toBe('store_unavailable')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    proxy().up()
    // The sender retries: the event is queued now (or was, by the add that outlived the 503).
    const retried = await waitFor('the queue to answer again', async () => {
      const again = await post(url, await createSignedDelivery({ event: delivery.event }))
      return again.status === 200 ? again : undefined
    })
    expect(retried.json).toMatchObject({ ok: true })
    await waitFor('the handler', () => (ran.length > 0 ? true : undefined))
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(ran).toEqual([delivery.event.id])
    expect(await queue.getJobCounts('completed', 'failed', 'waiting', 'active')).toMatchObject({ completed: 1, failed: 0 })
  })
})
