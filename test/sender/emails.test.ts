/**
 * The faithful sender's `GET /emails/{id}`: each email's events (`{ type, created_at, details }`)
 * whatever its endpoints' state, the state they moved it to, the scope `emails:read`, and a 404
 * for an unknown email or one past the retention.
 */
import { createFaithfulSender, type FaithfulSender, TEST_API_KEY } from '@email-webhooks/core/testing'
import { afterEach, describe, expect, it } from 'vitest'

const closers: Array<() => unknown> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

function sender(options: Parameters<typeof createFaithfulSender>[0] = {}): FaithfulSender {
  const s = createFaithfulSender({ timeScale: 0.001, fetch: async () => Response.json({ ok: true }), ...options })
  closers.push(() => s.close())
  return s
}

async function getEmail(s: FaithfulSender, id: string, key = TEST_API_KEY) {
  const res = await s.fetch(new Request(`http://sender.test/v1/emails/${id}`, { headers: { authorization: `Bearer ${key}` } }))
  return { status: res.status, requestId: res.headers.get('x-request-id'), body: (await res.json()) as Record<string, unknown> }
}

describe('faithful sender: GET /emails/{id}', () => {
  it("keeps an email's events whatever the endpoint's state: delivered, emitted while disabled, or with no endpoint at all", async () => {
    const s = sender()
    const { id: endpointId } = s.createEndpoint('https://hooks.example.com/email')
    const email = crypto.randomUUID()
    const queued = s.emit({ type: 'email.queued', data: { id: email } })
    const patch = (enabled: boolean) =>
      s.fetch(
        new Request(`http://sender.test/v1/webhooks/${endpointId}`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ enabled }),
        }),
      )
    await patch(false)
    const submitted = s.emit({ type: 'email.submitted', data: { id: email } })
    const accepted = s.emit({ type: 'email.recipient_accepted', data: { id: email, recipient: 'ann@example.com', smtp: '250 ok' } })
    expect([queued.deliveries.length, submitted.deliveries.length, accepted.deliveries.length]).toEqual([1, 0, 0])
    await s.idle()

    const { status, requestId, body } = await getEmail(s, email)
    expect(status).toBe(200)
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/)
    expect(body).toEqual({
      id: email,
      state: 'submitted',
      message_id: null,
      created_at: queued.event.created_at,
      scheduled_at: null,
      submitted_at: submitted.event.created_at,
      smtp_code: null,
      diagnostic: null,
      recipients: [
        {
          address: 'ann@example.com',
          kind: 'to',
          state: 'accepted',
          enhanced_status: null,
          remote_response: null,
          observed_at: accepted.event.created_at,
        },
      ],
      recipient_retry: null,
      events: [
        { type: 'email.queued', created_at: queued.event.created_at, details: {} },
        { type: 'email.submitted', created_at: submitted.event.created_at, details: {} },
        {
          type: 'email.recipient_accepted',
          created_at: accepted.event.created_at,
          details: { recipient: 'ann@example.com', smtp: '250 ok' },
        },
      ],
    })
    expect(s.email(email)).toEqual(body)
  })

  it('moves the state in emission order: a terminal state stays, a recovered submission resolves uncertain', () => {
    const s = sender()
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()]
    for (const type of ['email.queued', 'email.submitted', 'email.bounced', 'email.deferred']) s.emit({ type, data: { id: a } })
    for (const type of ['email.queued', 'email.uncertain', 'email.submission_recovered']) s.emit({ type, data: { id: b } })
    expect([s.email(a)?.state, s.email(b)?.state]).toEqual(['bounced', 'submitted'])
    // Events that are not email events are not an email's.
    s.emit({ type: 'organization.updated', data: { id: crypto.randomUUID() } })
  })

  it('answers 404 not_found for an unknown email and for one past the retention, and 403 without the scope emails:read', async () => {
    let now = Date.parse('2026-11-25T06:00:00Z')
    const s = sender({
      now: () => now,
      emailRetentionMs: 3_600_000,
      apiKeys: { [TEST_API_KEY]: ['emails:read'], k_hooks: ['webhooks:manage'] },
    })
    const email = crypto.randomUUID()
    s.emit({ type: 'email.queued', data: { id: email } })
    expect((await getEmail(s, email)).status).toBe(200)
    expect(await getEmail(s, email, 'k_hooks')).toMatchObject({
      status: 403,
      body: { error: { code: 'missing_scope', message: expect.stringContaining('emails:read') } },
    })
    const unknown = await getEmail(s, crypto.randomUUID())
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'not_found', requestId: unknown.requestId } } })
    now += 3_600_001
    expect((await getEmail(s, email)).status).toBe(404)
    expect(s.email(email)).toBeUndefined()
  })
})
