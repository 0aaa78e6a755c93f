/**
 * Inbox mode (`mode: 'inbox'`) through core's receiver, on the memory store and a real SQLite file:
 * the answer is 200 queued once the event is recorded, and the worker runs the handler after it,
 * once; duplicates, retries with backoff, dead letters, poison events, ordering, the types kept in
 * the request, stop/start, and the option checks.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  createReceiver,
  type DedupStore,
  type EmailEventHandlers,
  type InboxOptions,
  MemoryDedupStore,
  type ReceiverOptions,
  type WebhookEvent,
  type WebhookLogger,
} from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createEmailSequence, createSignedDelivery, reversed, type SignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { ALL_TIERS, scaled, sleep, until } from '../support/time.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-inbox-receiver-'))
const opened: DedupStore[] = []
afterAll(async () => {
  for (const store of opened) await store.close?.()
  rmSync(dir, { recursive: true, force: true })
})

const STORES: { name: string; create(): DedupStore }[] = [
  { name: 'MemoryDedupStore', create: () => new MemoryDedupStore() },
  { name: 'SqliteDedupStore', create: () => new SqliteDedupStore({ path: join(dir, `${crypto.randomUUID()}.db`) }) },
]

function capture(): { logger: WebhookLogger; errors: string[]; warnings: string[] } {
  const errors: string[] = []
  const warnings: string[] = []
  return { logger: { error: (m) => void errors.push(m), warn: (m) => void warnings.push(m), info: () => {} }, errors, warnings }
}

type Receiver = ReturnType<typeof createReceiver>
const receivers: Receiver[] = []
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.inbox?.stop()
})

function inboxReceiver(store: DedupStore, handlers: EmailEventHandlers, options: Partial<ReceiverOptions> = {}): Receiver {
  opened.push(store)
  const receiver = createReceiver({ secret: TEST_SECRET, store, handlers, mode: 'inbox', logger: false, ...options })
  receivers.push(receiver)
  return receiver
}

const send = (receiver: Receiver, delivery: SignedDelivery) => receiver.receive({ headers: delivery.headers, body: delivery.body })

describe('inbox mode at start-up', () => {
  it('says once that it is in inbox mode and who runs the handlers: its worker here, a worker elsewhere, or the queue', async () => {
    const said = (options: Partial<ReceiverOptions>): string[] => {
      const infos: string[] = []
      inboxReceiver(
        new MemoryDedupStore(),
        { 'email.bounced': () => {} },
        {
          logger: { error: () => {}, warn: () => {}, info: (m) => void infos.push(m) },
          ...options,
        },
      )
      return infos
    }
    expect(said({ inbox: { concurrency: 2, maxAttempts: 5, inRequest: ['email.bounced'] } })).toEqual([
      "[@email-webhooks/core] inbox mode: each delivery is answered 200 once the event is recorded in the store's inbox (MemoryDedupStore); the inbox worker runs the handlers in this process, after the answer (2 at a time, up to 5 attempts each; `email-webhooks inbox stats` shows the queue). email.bounced still run in the request (inbox.inRequest).",
    ])
    expect(said({ inbox: { worker: false } })).toEqual([
      expect.stringContaining(
        'the inbox worker does not run in this process (inbox.worker: false): run `email-webhooks inbox work` (or createInboxWorker) beside it',
      ),
    ])
    const sink = { enqueue: async () => 'queued' as const }
    expect(said({ inbox: { sink } })).toEqual([
      expect.stringContaining(
        "handed to your queue (inbox.sink) and accepted there; your queue's consumers run the handlers (createInboxProcessor).",
      ),
    ])
    // Request mode says nothing of an inbox.
    expect(said({ mode: 'request' })).toEqual([])
  })
})

for (const kind of STORES) {
  describe(`inbox mode on ${kind.name}`, () => {
    it('answers 200 queued before the handler runs; the worker then runs it once', async () => {
      let release = () => {}
      const gate = new Promise<void>((resolve) => {
        release = resolve
      })
      const runs: WebhookEvent[] = []
      const receiver = inboxReceiver(kind.create(), {
        'email.bounced': async (event) => {
          runs.push(event)
          await gate
        },
      })
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const answer = await send(receiver, delivery)
      expect(answer).toMatchObject({ status: 200, body: '{"ok":true,"queued":true}', outcome: 'queued' })
      await until(() => runs.length === 1, 'the worker to start the handler')
      expect(await receiver.inbox?.stats()).toMatchObject({ pending: 0, running: 1, dead: 0 })
      release()
      await until(async () => (await receiver.inbox?.stats())?.running === 0, 'the entry to be finished')
      expect(runs).toEqual([delivery.event])
      expect(receiver.stats()).toMatchObject({ queued: 1, handled: 1, dead: 0 })
      expect(await receiver.store().inbox?.get(`default:${delivery.event.id}`)).toMatchObject({ state: 'done', attempts: 1 })
    })

    it('answers a redelivery 200 duplicate while queued, while running and once done; the handler runs once', async () => {
      let release = () => {}
      const gate = new Promise<void>((resolve) => {
        release = resolve
      })
      let runs = 0
      const receiver = inboxReceiver(
        kind.create(),
        {
          'email.recipient_accepted': async () => {
            runs++
            await gate
          },
        },
        { inbox: { worker: false } },
      )
      const delivery = await createSignedDelivery({ type: 'email.recipient_accepted' })
      expect((await send(receiver, delivery)).outcome).toBe('queued')
      expect(await send(receiver, delivery)).toMatchObject({ status: 200, outcome: 'duplicate' })
      receiver.inbox?.start()
      await until(() => runs === 1, 'the handler to start')
      expect(await send(receiver, delivery)).toMatchObject({ status: 200, outcome: 'duplicate' })
      release()
      await until(async () => (await receiver.store().inbox?.get(`default:${delivery.event.id}`))?.state === 'done', 'done')
      expect(await send(receiver, delivery)).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect(runs).toBe(1)
      expect(receiver.stats()).toMatchObject({ queued: 1, duplicates: 3, handled: 1 })
    })

    it('retries a failing handler after growing waits, saying each attempt, keeps it dead with its last error after maxAttempts, and runs it again after retry', async () => {
      const { logger, errors } = capture()
      let broken = true
      const tries: number[] = []
      const receiver = inboxReceiver(
        kind.create(),
        {
          'email.complained': () => {
            tries.push(performance.now())
            if (broken) throw new Error('CRM answered 502')
          },
        },
        { logger, inbox: { maxAttempts: 4, retryBaseMs: 80, retryMaxMs: 10_000, pollMs: 5 } },
      )
      const poison = await createSignedDelivery({ type: 'email.complained' })
      expect((await send(receiver, poison)).outcome).toBe('queued')
      await until(async () => (await receiver.inbox?.stats())?.dead === 1, 'the entry to be dead')
      expect(tries).toHaveLength(4)
      // Waits of half the step plus up to as much again: ≥ 40, 80, 160 ms.
      const waits = tries.slice(1).map((t, i) => t - (tries[i] as number))
      for (const [i, wait] of waits.entries()) expect(wait, `wait ${i + 1}`).toBeGreaterThanOrEqual(40 * 2 ** i - 5)
      const key = `default:${poison.event.id}`
      const entry = await receiver.store().inbox?.get(key)
      expect(entry).toMatchObject({ state: 'dead', attempts: 4 })
      expect(entry?.lastError).toContain('CRM answered 502')
      expect(entry?.lastError).not.toContain(poison.body)
      const deadLogs = errors.filter((line) => line.includes('dead letter'))
      expect(deadLogs).toHaveLength(1)
      expect(deadLogs[0]).toContain(poison.event.id)
      expect(deadLogs[0]).toContain(`email-webhooks inbox retry ${poison.event.id}`)
      expect(deadLogs[0]).toContain('email-webhooks inbox retry --dead')
      expect(deadLogs[0]).not.toContain(poison.body)
      // The sender had its 200 long ago: the worker's failures are said as its attempts, with the next wait.
      expect(errors.filter((line) => line.includes('handler_failed') || line.includes('sender will retry'))).toEqual([])
      const failures = errors.filter((line) => line.includes('inbox attempt'))
      expect(failures).toHaveLength(3)
      for (const [i, line] of failures.entries()) {
        expect(line).toMatch(
          new RegExp(
            `^\\[@email-webhooks/core\\] inbox attempt ${i + 1}/4 failed for email\\.complained ${poison.event.id}: Error: CRM answered 502 \\(at .+\\); next try in \\d+ (ms|s) `,
          ),
        )
        expect(line).toContain('only the inbox worker tries it again')
      }

      // A second dead letter of the type within the minute is counted, and said once the worker stops.
      const second = await createSignedDelivery({ type: 'email.complained' })
      await send(receiver, second)
      await until(async () => (await receiver.inbox?.stats())?.dead === 2, 'the second dead entry')
      expect(errors.filter((line) => line.includes('dead letter'))).toHaveLength(1)
      expect(receiver.stats().dead).toBe(2)
      await receiver.inbox?.stop()
      const folded = errors.filter((line) => line.includes('more dead letter'))
      expect(folded).toEqual([
        expect.stringContaining(`1 more dead letter of email.complained since the last line (the last: ${second.event.id}`),
      ])
      expect(folded[0]).toContain('email-webhooks inbox retry --dead')

      broken = false
      expect(await receiver.store().inbox?.retry('dead')).toBe(2)
      receiver.inbox?.start()
      await until(async () => (await receiver.store().inbox?.get(key))?.state === 'done', 'the retried entry to be done')
      await until(async () => (await receiver.inbox?.stats())?.pending === 0, 'the second entry to be done')
      expect(await receiver.inbox?.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 })
      expect(receiver.stats().handled).toBe(2)
    })

    it('says every dead letter: a new type at once, more of one type within the minute folded into a count said when the worker stops', async () => {
      const { logger, errors } = capture()
      const fail = () => {
        throw new Error('CRM is down')
      }
      const receiver = inboxReceiver(
        kind.create(),
        { 'email.bounced': fail, 'email.rejected': fail },
        { logger, inbox: { maxAttempts: 1, pollMs: 5, concurrency: 1 } },
      )
      const bounces = await Promise.all([1, 2, 3].map(() => createSignedDelivery({ type: 'email.bounced' })))
      const rejected = await createSignedDelivery({ type: 'email.rejected' })
      for (const delivery of [...bounces, rejected]) expect((await send(receiver, delivery)).outcome).toBe('queued')
      await until(async () => (await receiver.inbox?.stats())?.dead === 4, 'four dead entries')
      const full = errors.filter((line) => line.includes('] dead letter '))
      expect(full).toHaveLength(2)
      expect(full.map((line) => /dead letter (email\.\w+)/.exec(line)?.[1]).sort()).toEqual(['email.bounced', 'email.rejected'])
      for (const line of full) expect(line).toMatch(/`email-webhooks inbox retry [0-9a-f-]{36}`/)
      expect(errors.filter((line) => line.includes('more dead letter'))).toEqual([])
      await receiver.inbox?.stop()
      expect(errors.filter((line) => line.includes('more dead letter'))).toEqual([
        expect.stringContaining('2 more dead letters of email.bounced since the last line'),
      ])
      expect(receiver.stats().dead).toBe(4)
      // Said once: stopping again says nothing more.
      await receiver.inbox?.stop()
      expect(errors.filter((line) => line.includes('dead letter'))).toHaveLength(3)
    })

    it('never lets a poison event hold up the others (one worker loop)', async () => {
      const handled: string[] = []
      const receiver = inboxReceiver(
        kind.create(),
        {
          'email.rejected': () => {
            throw new Error('poison')
          },
          'email.deferred': (event) => void handled.push(event.id),
        },
        // A backoff long enough for the five others to run between the poison event's attempts: its
        // retries come after 0.25-0.5 s, then 0.5-1 s (times TEST_TIME_SCALE on a loaded machine).
        { inbox: { concurrency: 1, maxAttempts: 3, retryBaseMs: scaled(500), pollMs: 5, worker: false } },
      )
      const poison = await createSignedDelivery({ type: 'email.rejected' })
      await send(receiver, poison)
      const others = await Promise.all(Array.from({ length: 5 }, () => createSignedDelivery({ type: 'email.deferred' })))
      for (const delivery of others) await send(receiver, delivery)
      receiver.inbox?.start()
      await until(() => handled.length === 5, 'the other events')
      // All five ran while the poison event waited between its attempts.
      expect((await receiver.store().inbox?.get(`default:${poison.event.id}`))?.state).not.toBe('dead')
      // Its two backoffs take up to 1.5 s.
      await until(async () => (await receiver.inbox?.stats())?.dead === 1, 'the poison event to be dead')
      expect(handled.sort()).toEqual(others.map((d) => d.event.id).sort())
    })

    it('with ordering, handles the events of one email oldest first and one at a time, whatever order they arrived in', async () => {
      const log: string[] = []
      let running = 0
      let most = 0
      const handle = async (event: WebhookEvent) => {
        running++
        most = Math.max(most, running)
        log.push(`${event.data.id}:${event.type}`)
        await sleep(15)
        running--
      }
      const types = ['email.queued', 'email.submitted', 'email.deferred', 'email.recipient_accepted', 'email.recipient_deferred'] as const
      const handlers = Object.fromEntries(types.map((type) => [type, handle])) as EmailEventHandlers
      const receiver = inboxReceiver(kind.create(), handlers, { ordering: true, inbox: { worker: false, concurrency: 4, pollMs: 5 } })
      const a = await createEmailSequence({ types })
      const b = await createEmailSequence({ types })
      for (let i = 0; i < types.length; i++) {
        await send(receiver, reversed(a.deliveries)[i] as SignedDelivery)
        await send(receiver, reversed(b.deliveries)[i] as SignedDelivery)
      }
      receiver.inbox?.start()
      await until(() => log.length === 10, 'all ten events')
      for (const seq of [a, b]) {
        const mine = log.filter((line) => line.startsWith(seq.emailId)).map((line) => line.split(':')[1])
        expect(mine).toEqual([...types])
      }
      // Two emails, each one at a time: never more than two handlers at once.
      expect(most).toBeLessThanOrEqual(2)
    })

    it('handles the types in inbox.inRequest in the request (200 after the handler), and queues the others', async () => {
      const order: string[] = []
      const receiver = inboxReceiver(
        kind.create(),
        {
          'email.bounced': () => void order.push('bounced handler'),
          'email.recipient_accepted': () => void order.push('delivered handler'),
        },
        { inbox: { inRequest: ['email.bounced'], worker: false } },
      )
      const bounced = await createSignedDelivery({ type: 'email.bounced' })
      const answer = await send(receiver, bounced)
      order.push('bounced answered')
      expect(answer).toMatchObject({ status: 200, body: '{"ok":true}', outcome: 'handled' })
      expect(await receiver.store().inbox?.get(`default:${bounced.event.id}`)).toBeUndefined()
      const delivered = await createSignedDelivery({ type: 'email.recipient_accepted' })
      expect(await send(receiver, delivered)).toMatchObject({ status: 200, outcome: 'queued' })
      order.push('delivered answered')
      expect(await receiver.inbox?.work()).toBe('handled')
      expect(order).toEqual(['bounced handler', 'bounced answered', 'delivered answered', 'delivered handler'])
      // The in-request event is a duplicate for the inbox too, and the other way round.
      expect((await send(receiver, bounced)).outcome).toBe('duplicate')
      expect((await send(receiver, delivered)).outcome).toBe('duplicate')
    })

    it('stop() waits for the handler that runs and takes nothing more until start()', async () => {
      const ended: string[] = []
      // The first handler runs until the test lets it end (stats() may take a while to see it running:
      // on SQLite its first call starts the store's reading thread).
      let letEnd = () => {}
      const held = new Promise<void>((resolve) => {
        letEnd = resolve
      })
      const receiver = inboxReceiver(
        kind.create(),
        {
          'email.deferred': async (event) => {
            if (ended.length === 0) await held
            ended.push(event.id)
          },
        },
        { inbox: { pollMs: 5, concurrency: 1 } },
      )
      const first = await createSignedDelivery({ type: 'email.deferred' })
      await send(receiver, first)
      await until(async () => (await receiver.inbox?.stats())?.running === 1, 'the first handler')
      const stopping = receiver.inbox?.stop()
      await sleep(100)
      expect(ended).toEqual([])
      letEnd()
      await stopping
      expect(ended).toEqual([first.event.id])
      const second = await createSignedDelivery({ type: 'email.deferred' })
      expect((await send(receiver, second)).outcome).toBe('queued')
      await sleep(100)
      expect(await receiver.inbox?.stats()).toMatchObject({ pending: 1, running: 0 })
      receiver.inbox?.start()
      await until(() => ended.length === 2, 'the second handler')
    })
  })
}

describe('inbox mode on SqliteDedupStore: a handler that outlasts its lease', () => {
  /**
   * A handler of `handlerMs` under a lease of `leaseMs` (renewed every third of it while the
   * handler runs): a redelivery of its event and a new event every `everyMs` are each answered
   * at once, the others are handled meanwhile, and the slow one runs once.
   */
  async function outlasts(handlerMs: number, inbox: Partial<InboxOptions>, everyMs: number): Promise<void> {
    let slowRuns = 0
    const handled: string[] = []
    const receiver = inboxReceiver(
      new SqliteDedupStore({ path: join(dir, `slow-${handlerMs}.db`) }),
      {
        'email.bounced': async () => {
          slowRuns++
          await sleep(handlerMs)
        },
        'email.recipient_accepted': (event) => void handled.push(event.id),
      },
      { inbox },
    )
    const slow = await createSignedDelivery({ type: 'email.bounced' })
    expect((await send(receiver, slow)).outcome).toBe('queued')
    await until(() => slowRuns === 1, 'the slow handler to start')
    const started = performance.now()
    const slowest: number[] = []
    const sent: string[] = []
    while (performance.now() - started < handlerMs + everyMs) {
      const t0 = performance.now()
      const again = await send(receiver, slow)
      expect(again).toMatchObject({ status: 200, outcome: 'duplicate' })
      const other = await createSignedDelivery({ type: 'email.recipient_accepted' })
      expect((await send(receiver, other)).outcome).toBe('queued')
      sent.push(other.event.id)
      slowest.push(performance.now() - t0)
      await sleep(everyMs)
    }
    await until(async () => (await receiver.store().inbox?.get(`default:${slow.event.id}`))?.state === 'done', 'the slow entry to be done')
    await until(() => handled.length === sent.length, 'the other events')
    expect(slowRuns).toBe(1)
    // Answered without waiting for the slow handler (the bound leaves a loaded machine room).
    expect(Math.max(...slowest)).toBeLessThan(Math.min(handlerMs / 2, scaled(1_000)))
    expect(await receiver.store().inbox?.get(`default:${slow.event.id}`)).toMatchObject({ attempts: 1 })
  }

  it('a handler of 4 s under a lease of 1 s blocks neither the answers nor the other events, and runs once', async () => {
    await outlasts(4_000, { leaseMs: 1_000 }, 250)
  })

  it.runIf(ALL_TIERS)(
    'a handler that takes 30 s (default lease) blocks neither the answers nor the other events, and runs once',
    async () => {
      await outlasts(30_000, {}, 1_000)
    },
    60_000,
  )
})

describe('inbox mode options', () => {
  const handlers = {}
  it('refuses what cannot work, saying what to do', () => {
    const noInbox: DedupStore = {
      claim: async () => ({ status: 'duplicate' }),
      complete: async () => true,
      release: async () => true,
    } as unknown as DedupStore
    expect(() => createReceiver({ secret: TEST_SECRET, handlers, store: noInbox, mode: 'inbox' })).toThrow(
      /this store has none.*inbox\.sink/,
    )
    const store = new MemoryDedupStore()
    expect(() => createReceiver({ secret: TEST_SECRET, handlers, store, inbox: {} })).toThrow(/inbox options need mode: 'inbox'/)
    expect(() => createReceiver({ secret: TEST_SECRET, handlers, store, mode: 'queue' as 'inbox' })).toThrow(
      /mode must be 'request' or 'inbox'/,
    )
    // A store that renews leases while a handler runs takes a lease shorter than the handler's deadline, but not under 1 s.
    expect(() =>
      createReceiver({ secret: TEST_SECRET, handlers, store, mode: 'inbox', inbox: { handlerTimeoutMs: 60_000, leaseMs: 30_000 } }),
    ).not.toThrow()
    expect(() => createReceiver({ secret: TEST_SECRET, handlers, store, mode: 'inbox', inbox: { leaseMs: 500 } })).toThrow(
      /leaseMs \(500\) must be at least 1000: the worker renews the lease every third of it/,
    )
    // One that cannot renew them (no extend) needs one lease that covers the handler.
    const noExtend = Object.assign(Object.create(store) as MemoryDedupStore, { extend: undefined })
    expect(() =>
      createReceiver({
        secret: TEST_SECRET,
        handlers,
        store: noExtend,
        mode: 'inbox',
        inbox: { handlerTimeoutMs: 60_000, leaseMs: 60_000 },
      }),
    ).toThrow(/leaseMs \(60000\) must exceed inbox.handlerTimeoutMs \(60000\): this store cannot renew a lease/)
    expect(() =>
      createReceiver({ secret: TEST_SECRET, handlers, store, mode: 'inbox', inbox: { inRequest: ['email.bouncd' as 'email.bounced'] } }),
    ).toThrow(
      /inRequest lists "email\.bouncd", which is not an email event type\. Did you mean "email\.bounced"\? It must be a list of email event types/,
    )
    // A typo inside inbox: { … } is refused, naming the nearest option, as at the top level.
    for (const [typo, nearest] of [
      ['inrequest', 'inRequest'],
      ['maxAttempt', 'maxAttempts'],
      ['workers', 'worker'],
    ]) {
      expect(() =>
        createReceiver({ secret: TEST_SECRET, handlers, store, mode: 'inbox', inbox: { [typo as string]: false } as InboxOptions }),
      ).toThrow(new RegExp(`unknown inbox option "${typo}": it would be ignored\\. Did you mean "${nearest}"\\?`))
    }
    const sink = { enqueue: async () => 'queued' as const }
    expect(() => createReceiver({ secret: TEST_SECRET, handlers, store, mode: 'inbox', inbox: { sink, worker: true } })).toThrow(
      /createInboxProcessor/,
    )
    expect(() => createReceiver({ secret: TEST_SECRET, handlers, store, mode: 'inbox', inbox: { maxAttempts: 0 } })).toThrow(
      /maxAttempts must be a positive whole number/,
    )
  })
})
