/**
 * The whole story against the faithful sender, over real HTTP on 127.0.0.1, with an Express
 * receiver (ordering on) on a real SQLite file: the receiver fails until the sender disables the
 * endpoint, events are emitted while it is disabled (no delivery record), the receiver is fixed,
 * `recoverEndpoint` retries what the deliveries list shows, and `reconcileEmails` brings the rest
 * from each email's own event list. Every event is handled exactly once, no email moves backwards,
 * and each email's state folded from what the handlers saw is the sender's. A second reconcile
 * handles nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EMAIL_EVENT_TYPES, type EventSource, foldEmailEvents, type HandlerContext, type WebhookEvent } from '@email-webhooks/core'
import { createWebhooksClient, reconcileEmails, recoverEndpoint } from '@email-webhooks/core/api'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createFaithfulSender, listenSender, TEST_API_KEY } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/express'
import express from 'express'
import { afterAll, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-reconcile-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Seeded randomness so repeats and reordering are the same on every run. */
function seeded(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31
    return x / 2 ** 31
  }
}

/** The message state an event sets (recipient events set none), as the handlers below track it. */
const MESSAGE_STATE: Record<string, string> = {
  'email.queued': 'queued',
  'email.submitted': 'submitted',
  'email.deferred': 'deferred',
  'email.uncertain': 'uncertain',
  'email.rejected': 'rejected',
  'email.bounced': 'bounced',
}

interface Seen {
  event: WebhookEvent
  source: EventSource
  order: string
}

/** What identifies an event across both paths: its email, type, time and recipient (the sender's event id is not in the list). */
const factKey = (emailId: string, type: string, createdAt: string, recipient: unknown) =>
  `${emailId}|${type}|${Date.parse(createdAt)}|${String(recipient ?? '')}`

it('endpoint fails → disabled → events while disabled → fixed → recover → reconcile: every event handled exactly once, states right', async () => {
  const store = new SqliteDedupStore({ path: join(dir, 'receiver.db') })
  const seen = new Map<string, Seen[]>()
  const applied = new Map<string, string>()
  let broken = false
  const handle = (event: WebhookEvent, ctx: HandlerContext) => {
    if (broken) throw new Error('database unavailable (simulated)')
    const emailId = (event.data as { id: string }).id
    seen.set(emailId, [...(seen.get(emailId) ?? []), { event, source: ctx.source, order: ctx.order.status }])
    // The app's own state: a message state is applied unless a newer event was handled already.
    const state = MESSAGE_STATE[event.type]
    if (state && ctx.order.status !== 'stale') applied.set(emailId, state)
  }

  let secret = ''
  let app: express.Express | undefined
  const server = createServer((req, res) => app?.(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
  // Two attempts per delivery: five lost events spend their budgets with the 10th failure, which disables the endpoint.
  const sender = createFaithfulSender({ timeScale: 0.0005, maxAttempts: 2, repeatProbability: 0.3, reorderWindowMs: 10, random: seeded(7) })
  const api = await listenSender(sender)
  try {
    const endpoint = sender.createEndpoint(receiverUrl)
    secret = endpoint.secret
    app = express()
    app.post(
      '/hooks',
      emailWebhook(secret, Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, handle])), { store, ordering: true, logger: false }),
    )
    const [a, b, c, d] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
    const emit = (emailId: string, type: string, details: Record<string, unknown> = {}) =>
      sender.emit({ type, data: { id: emailId, ...details } })

    // Healthy.
    for (const email of [a, b, c]) emit(email, 'email.queued')
    await sender.idle()
    // Broken: five events spend two attempts each; the 10th failure disables the endpoint.
    broken = true
    emit(a, 'email.submitted')
    emit(b, 'email.submitted')
    emit(c, 'email.submitted')
    emit(d, 'email.queued')
    emit(a, 'email.recipient_accepted', { recipient: 'ann@example.com' })
    await sender.idle()
    expect(sender.endpoint(endpoint.id)?.enabled).toBe(false)
    // Emitted while disabled: no delivery record, only the emails' own event lists show them.
    const whileDisabled = [
      emit(a, 'email.recipient_accepted', { recipient: 'bob@example.com' }),
      emit(b, 'email.recipient_accepted', { recipient: 'cat@example.com' }),
      emit(c, 'email.bounced', { recipient: 'dan@example.com' }),
      emit(d, 'email.submitted'),
    ]
    // Two recipients of d accepted in one millisecond.
    const together = new Date(Date.now() + 50).toISOString()
    for (const recipient of ['eve@example.com', 'fay@example.com']) {
      whileDisabled.push(
        sender.emit({
          event: { id: crypto.randomUUID(), type: 'email.recipient_accepted', created_at: together, data: { id: d, recipient } },
        }),
      )
    }
    expect(whileDisabled.map((e) => e.deliveries.length)).toEqual([0, 0, 0, 0, 0, 0])

    // Fixed; recover retries what the deliveries list shows.
    broken = false
    const client = createWebhooksClient({ apiKey: TEST_API_KEY, baseUrl: api.baseUrl })
    const recovered = await recoverEndpoint({ client, endpointId: endpoint.id, store, spacingMs: 5 })
    await sender.idle()
    expect([recovered.enable, recovered.retried.length, recovered.failed]).toEqual(['reenabled', 5, []])
    // A newer event of b is delivered before reconcile brings b's older one.
    emit(b, 'email.bounced', { recipient: 'cat@example.com' })
    await sender.idle()
    const handledBefore = [...seen.values()].flat().length

    // Reconcile from the source of truth.
    const report = await reconcileEmails({ client, emailIds: [a, b, c, d, crypto.randomUUID(), 'not-an-id'], receiverUrl, secret })
    expect(report.stopped).toBeUndefined()
    expect(report.emails.map((e) => e.status)).toEqual(['reconciled', 'reconciled', 'reconciled', 'reconciled', 'not_found', 'invalid_id'])
    expect(report.totals.events).toMatchObject({ handled: whileDisabled.length, refused: 0, failed: 0, too_old: 0, not_sent: 0 })
    expect(report.totals.events.duplicate).toBe(handledBefore)
    expect([...seen.values()].flat().length).toBe(handledBefore + whileDisabled.length)

    for (const emailId of [a, b, c, d]) {
      const truth = sender.email(emailId)
      if (!truth) throw new Error(`no email ${emailId}`)
      const handled = seen.get(emailId) ?? []
      // Exactly once: each entry of the email's list was handled once, whichever path brought it.
      const keys = handled.map(({ event }) => {
        const data = event.data as { recipient?: unknown }
        return factKey(emailId, event.type, event.created_at, data.recipient)
      })
      const listed = truth.events.map((e) => factKey(emailId, e.type, e.created_at, e.details.recipient))
      expect([...keys].sort()).toEqual([...listed].sort())
      // The events emitted while disabled came from reconcile, the rest from the sender.
      const fromReconcile = handled.filter((h) => h.source === 'reconcile').map((h) => h.event.created_at)
      const expected = whileDisabled.filter((e) => (e.event.data as { id: string }).id === emailId).map((e) => e.event.created_at)
      expect(fromReconcile.sort()).toEqual(expected.sort())
      // The email's state folded from what the handlers saw is the sender's, and so is the app's own.
      const { state } = foldEmailEvents(
        handled.map((h) => h.event),
        { emailId },
      )
      expect(state.status).toBe(truth.state)
      expect(applied.get(emailId)).toBe(truth.state)
      for (const recipient of truth.recipients) expect(state.recipients[recipient.address]?.status).toBe(recipient.state)
      // Never backwards: the events not seen as stale came in created_at order.
      const fresh = handled.filter((h) => h.order !== 'stale').map((h) => Date.parse(h.event.created_at))
      expect(fresh).toEqual([...fresh].sort((x, y) => x - y))
    }
    // b's older recipient event arrived after its newer bounce: seen as stale, the state stayed bounced.
    expect(seen.get(b)?.find((h) => h.source === 'reconcile')?.order).toBe('stale')
    expect(sender.email(b)?.state).toBe('bounced')

    // A second reconcile handles nothing.
    const again = await reconcileEmails({ client, emailIds: [a, b, c, d], receiverUrl, secret })
    expect(again.totals.events).toMatchObject({ handled: 0, duplicate: handledBefore + whileDisabled.length })
    expect([...seen.values()].flat().length).toBe(handledBefore + whileDisabled.length)
  } finally {
    sender.close()
    await api.close()
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    await store.close()
  }
}, 60_000)
