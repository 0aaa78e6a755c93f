/**
 * createInboxWorker: the receiver's inbox worker without the receiver, over the same store. What an
 * inbox-mode receiver queued is handled once through the receiver's path; failures retry, then end
 * dead, each one told to onDeadLetter; drain() handles what is due; an entry of another namespace is
 * given up with a message naming both; bad options are refused when it is built.
 */
import { createInboxWorker, createReceiver, type InboxDeadLetter, MemoryDedupStore, type WebhookLogger } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'

/** Queues `count` email.bounced events through an inbox-mode receiver (its own worker off); their ids. */
async function queue(store: MemoryDedupStore, count: number, namespace?: string): Promise<string[]> {
  const receiver = createReceiver({
    secret: TEST_SECRET,
    store,
    logger: false,
    mode: 'inbox',
    inbox: { worker: false },
    ...(namespace ? { namespace } : {}),
  })
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const { headers, body, event } = await createSignedDelivery({ type: 'email.bounced' })
    expect((await receiver.receive({ headers, body })).status).toBe(200)
    ids.push(event.id)
  }
  return ids
}

/** What {@link slowFinishes} saw: finishes on their way, finishes answered, and how many were on their way at each take. */
interface FinishesSeen {
  unanswered: number
  answered: number
  unansweredAtTake: number[]
}

/**
 * Makes the store's inbox answer each finish `ms` later (a round trip with its fsync) and counts
 * them; with `takeRunsFirst`, a take sent while a finish is on its way finds nothing (it ran on
 * another pool connection before the finish). `onFinish` is called as each finish is sent.
 */
function slowFinishes(store: MemoryDedupStore, ms: number, opts: { takeRunsFirst?: boolean; onFinish?: () => void } = {}): FinishesSeen {
  const inbox = store.inbox
  const finish = inbox.finish.bind(inbox)
  const take = inbox.take.bind(inbox)
  const seen: FinishesSeen = { unanswered: 0, answered: 0, unansweredAtTake: [] }
  inbox.finish = async (lease, finishOpts) => {
    seen.unanswered++
    opts.onFinish?.()
    await new Promise((resolve) => setTimeout(resolve, ms))
    const done = await finish(lease, finishOpts)
    seen.unanswered--
    seen.answered++
    return done
  }
  inbox.take = (takeOpts) => {
    seen.unansweredAtTake.push(seen.unanswered)
    return opts.takeRunsFirst && seen.unanswered > 0 ? Promise.resolve(undefined) : take(takeOpts)
  }
  return seen
}

describe('createInboxWorker', () => {
  it('drains what an inbox-mode receiver queued: each event handled once, recorded as done in the dedup store', async () => {
    const store = new MemoryDedupStore()
    const ids = await queue(store, 3)
    const handled: string[] = []
    const worker = createInboxWorker({ store, handlers: { 'email.bounced': (event) => void handled.push(event.id) } })
    expect(worker.settings).toMatchObject({ namespace: 'default', concurrency: 4, maxAttempts: 10, ordered: false })
    await worker.drain()
    expect(handled.sort()).toEqual([...ids].sort())
    expect(worker.counts()).toEqual({ handled: 3, duplicate: 0, retry: 0, dead: 0, deferred: 0 })
    expect(await worker.stats()).toMatchObject({ pending: 0, running: 0, dead: 0, lagMs: null })
    for (const id of ids) expect(await store.lookup(`default:${id}`)).toBe('done')
    await worker.drain()
    expect(handled).toHaveLength(3)
  })

  it('retries a failing handler with backoff, then gives the entry up after maxAttempts, telling onDeadLetter instead of the log', async () => {
    const store = new MemoryDedupStore()
    const [id] = await queue(store, 1)
    const letters: InboxDeadLetter[] = []
    const logged: string[] = []
    const logger: WebhookLogger = { error: (m) => logged.push(m), warn: (m) => logged.push(m) }
    const worker = createInboxWorker({
      store,
      logger,
      handlers: {
        'email.bounced': () => {
          throw new Error('boom')
        },
      },
      inbox: { maxAttempts: 2, retryBaseMs: 1, retryMaxMs: 1 },
      onDeadLetter: (letter) => letters.push(letter),
    })
    expect(await worker.work()).toBe('retry')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(await worker.work()).toBe('dead')
    expect(letters).toEqual([{ key: `default:${id}`, eventId: id, type: 'email.bounced', attempts: 2, error: 'Error: boom' }])
    expect(logged.some((line) => line.includes('dead letter'))).toBe(false)
    // The failed attempt before the last is said as the worker's, with its next wait; the last one is the dead letter.
    expect(logged.filter((line) => line.includes('500 handler_failed'))).toEqual([])
    expect(logged).toEqual([
      expect.stringMatching(new RegExp(`inbox attempt 1/2 failed for email\\.bounced ${id}: Error: boom \\(at .+\\); next try in 1 ms`)),
    ])
    expect(worker.receiverStats()).toMatchObject({ dead: 1, failed: { handler_failed: 2 } })
    expect(await store.inbox.get(`default:${id}`)).toMatchObject({ state: 'dead', attempts: 2, lastError: 'Error: boom' })
  })

  it('gives up an entry of another namespace at once, naming both, without running a handler', async () => {
    const store = new MemoryDedupStore()
    const [id] = await queue(store, 1, 'shop')
    let runs = 0
    const worker = createInboxWorker({ store, logger: false, handlers: { 'email.bounced': () => void runs++ } })
    expect(await worker.work()).toBe('dead')
    expect(runs).toBe(0)
    expect((await store.inbox.get(`shop:${id}`))?.lastError).toBe(
      `recorded under another namespace than this worker's ("default"): run the worker with the receiver's namespace, then retry the dead entries (key shop:${id})`,
    )
  })

  it('stop() ends a drain early and waits for the entry being handled; running() counts it', async () => {
    const store = new MemoryDedupStore()
    await queue(store, 3)
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const worker = createInboxWorker({ store, inbox: { concurrency: 1 }, handlers: { 'email.bounced': () => gate } })
    const drained = worker.drain()
    await expect.poll(() => worker.running()).toBe(1)
    const stopped = worker.stop()
    release()
    await Promise.all([drained, stopped])
    expect(worker.running()).toBe(0)
    expect(worker.counts().handled).toBe(1)
    expect(await worker.stats()).toMatchObject({ pending: 2, running: 0 })
    worker.start()
    await expect(worker.drain()).rejects.toThrow('drain() needs a stopped worker')
    await worker.stop()
    expect(worker.counts().handled + (await worker.stats()).pending).toBe(3)
  })

  it('sends the next take beside the last finish, and drain() resolves only once every finish is answered', async () => {
    const store = new MemoryDedupStore()
    const ids = await queue(store, 3)
    // A store whose finishes take 30 ms to be answered (a round trip with its fsync).
    const seen = slowFinishes(store, 30)
    const worker = createInboxWorker({ store, inbox: { concurrency: 1 }, handlers: { 'email.bounced': () => {} } })
    await worker.drain()
    // The loop took its second and third entries while the previous one's finish was on its way.
    expect(seen.unansweredAtTake.slice(1, 3)).toEqual([1, 1])
    expect(seen.answered).toBe(3)
    expect(worker.running()).toBe(0)
    expect(worker.counts()).toEqual({ handled: 3, duplicate: 0, retry: 0, dead: 0, deferred: 0 })
    expect(await worker.stats()).toMatchObject({ pending: 0, running: 0 })
    for (const id of ids) expect(await store.lookup(`default:${id}`)).toBe('done')
  })

  it('looks again once its finishes are answered when a take found nothing (the next entry of an email waits for the last finish)', async () => {
    const store = new MemoryDedupStore()
    await queue(store, 2)
    // A take that runs before the finish it follows (another connection of a pool) sees nothing due.
    slowFinishes(store, 30, { takeRunsFirst: true })
    const worker = createInboxWorker({ store, inbox: { concurrency: 1 }, handlers: { 'email.bounced': () => {} } })
    await worker.drain()
    expect(worker.counts().handled).toBe(2)
    expect(await worker.stats()).toMatchObject({ pending: 0, running: 0 })
  })

  it('stop() waits for the finishes on their way, and takes nothing more once called while a loop waits for them', async () => {
    const store = new MemoryDedupStore()
    await queue(store, 3)
    let stopped: Promise<void> | undefined
    const stop = (): Promise<void> => worker.stop()
    // The take runs before the finish it follows (another pool connection): nothing due until it
    // lands. stop() comes while the first finish is on its way and the loop waits for it to look again.
    const seen = slowFinishes(store, 50, {
      takeRunsFirst: true,
      onFinish: () =>
        setTimeout(() => {
          stopped ??= stop()
        }, 10),
    })
    let runs = 0
    const worker = createInboxWorker({ store, inbox: { concurrency: 1 }, handlers: { 'email.bounced': () => void runs++ } })
    worker.start()
    await expect.poll(() => stopped !== undefined).toBe(true)
    await stopped
    // The finish sent before stop() has its answer, and the loop waiting for it took no second entry.
    expect(seen.unanswered).toBe(0)
    expect(runs).toBe(1)
    expect(worker.counts().handled).toBe(1)
    expect(await worker.stats()).toMatchObject({ pending: 2, running: 0 })
  })

  it('refuses a sink, a store without an inbox and bad inbox options when it is built', () => {
    const store = new MemoryDedupStore()
    const sink = { enqueue: async () => 'queued' as const }
    // @ts-expect-error: a sink is not an option of the worker
    expect(() => createInboxWorker({ store, inbox: { sink } })).toThrow("with inbox.sink your queue's workers run the handlers")
    const bare = { claim: store.claim.bind(store), complete: store.complete.bind(store), release: store.release.bind(store) }
    expect(() => createInboxWorker({ store: bare })).toThrow("takes entries from the store's inbox (store.inbox), and this store has none")
    expect(() => createInboxWorker({ store, inbox: { maxAttempts: 0 } })).toThrow('inbox.maxAttempts must be a positive whole number')
    expect(() => createInboxWorker({ store, onDeadLetter: 'log' as never })).toThrow('onDeadLetter must be a function')
  })
})
