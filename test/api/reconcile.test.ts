/**
 * reconcileEmails() against the faithful sender and the core receiver (ordering on, memory store):
 * it sends each event of an email's list that the receiver did not handle, signed as the sender
 * signs, oldest first, with a deterministic id; the sender's own deliveries and a second run are
 * duplicates; bad input (an id that is not a UUID, a 404, unusable entries), rate limits and a
 * failing or refusing receiver are reported per email or per event, never a crash.
 */
import {
  DEFAULT_RETENTION_MS,
  EMAIL_EVENT_TYPES,
  type EventSource,
  emailWebhook,
  MemoryDedupStore,
  RECONCILE_FIELD,
  verifyWebhook,
  type WebhookEvent,
} from '@email-webhooks/core'
import {
  createWebhooksClient,
  DEFAULT_RECONCILE_RETENTION_MS,
  type EmailStatus,
  ReconcileAbortedError,
  type ReconcileEmailsOptions,
  reconcileEmails,
  reconcileEventId,
  type WebhooksClientOptions,
} from '@email-webhooks/core/api'
import { createFaithfulSender, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterEach, describe, expect, it } from 'vitest'

const KEY = `ek_live_${crypto.randomUUID().replaceAll('-', '')}`
const WEBHOOKS_ONLY_KEY = `ek_live_${crypto.randomUUID().replaceAll('-', '')}`
const RECEIVER = 'https://hooks.example.com/email'
const closers: Array<() => unknown> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

interface Run {
  emailId: string
  type: string
  source: EventSource
  recipient: unknown
  order: string
}

interface SetupOptions {
  ordering?: boolean
  /** Answer instead of the receiver (return undefined to let it answer). */
  intercept?: (request: Request, index: number) => Response | undefined
  /** Rewrites the JSON of `GET /emails/{id}` answers. */
  rewriteEmail?: (email: EmailStatus) => unknown
  client?: Partial<WebhooksClientOptions>
}

function setup(options: SetupOptions = {}) {
  const runs: Run[] = []
  const failing = new Set<string>()
  const record = (event: WebhookEvent, ctx: { source: EventSource; order: { status: string } }) => {
    if (failing.has(event.type)) throw new Error('down (simulated)')
    const data = event.data as { id: string; recipient?: unknown }
    runs.push({ emailId: data.id, type: event.type, source: ctx.source, recipient: data.recipient, order: ctx.order.status })
  }
  const receiver = emailWebhook(TEST_SECRET, Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, record])), {
    store: new MemoryDedupStore(),
    ordering: options.ordering ?? true,
    logger: false,
  })
  const posts: Request[] = []
  const receiverFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    posts.push(request.clone())
    return options.intercept?.(request, posts.length - 1) ?? receiver(request)
  }
  const sender = createFaithfulSender({
    timeScale: 0.0005,
    apiKeys: { [KEY]: ['webhooks:manage', 'emails:read'], [WEBHOOKS_ONLY_KEY]: ['webhooks:manage'] },
    fetch: receiverFetch,
  })
  closers.push(() => sender.close())
  const { id: endpointId } = sender.createEndpoint(RECEIVER, { secret: TEST_SECRET })
  const client = createWebhooksClient({
    apiKey: KEY,
    baseUrl: 'https://api.sender.test/v1',
    backoffBaseMs: 1,
    fetch: async (input, init) => {
      const answer = await sender.fetch(new Request(input, init))
      if (!options.rewriteEmail || !new URL(String(input)).pathname.startsWith('/v1/emails/') || answer.status !== 200) return answer
      const email = options.rewriteEmail((await answer.json()) as EmailStatus)
      return Response.json(email, { headers: { 'x-request-id': answer.headers.get('x-request-id') ?? '' } })
    },
    ...options.client,
  })
  const reconcile = (emailIds: string[], extra: Partial<ReconcileEmailsOptions> = {}) =>
    reconcileEmails({ client, emailIds, receiverUrl: RECEIVER, secret: TEST_SECRET, fetch: receiverFetch, backoffBaseMs: 1, ...extra })
  const emit = (emailId: string, type: string, details: Record<string, unknown> = {}) =>
    sender.emit({ type, data: { id: emailId, ...details } }).event
  const setEnabled = (enabled: boolean) =>
    sender.fetch(
      new Request(`https://api.sender.test/v1/webhooks/${endpointId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled }),
      }),
    )
  return { sender, client, runs, posts, failing, reconcile, emit, setEnabled }
}

const outcomes = (report: { emails: { events: { type: string; outcome: string }[] }[] }, email = 0) =>
  report.emails[email]?.events.map((e) => [e.type, e.outcome])

describe('reconcileEmails: what it sends', () => {
  it('sends, oldest first, the events the receiver missed while the endpoint was disabled (ctx.source reconcile); what the sender delivered is a duplicate; a second run handles nothing', async () => {
    const { sender, runs, reconcile, emit, setEnabled } = setup()
    const email = crypto.randomUUID()
    emit(email, 'email.queued')
    await sender.idle()
    await setEnabled(false)
    emit(email, 'email.submitted')
    emit(email, 'email.recipient_accepted', { recipient: 'ann@example.com' })
    emit(email, 'email.bounced', { recipient: 'bob@example.com' })
    await sender.idle()
    await setEnabled(true)
    expect(runs.map((r) => r.type)).toEqual(['email.queued'])

    const report = await reconcile([email])
    expect(report.emails[0]).toMatchObject({ emailId: email, status: 'reconciled', state: 'bounced', requestId: expect.any(String) })
    expect(outcomes(report)).toEqual([
      ['email.queued', 'duplicate'],
      ['email.submitted', 'handled'],
      ['email.recipient_accepted', 'handled'],
      ['email.bounced', 'handled'],
    ])
    expect(runs.map((r) => [r.type, r.source])).toEqual([
      ['email.queued', 'sender'],
      ['email.submitted', 'reconcile'],
      ['email.recipient_accepted', 'reconcile'],
      ['email.bounced', 'reconcile'],
    ])
    // One at a time, oldest first: none of them was stale.
    expect(runs.map((r) => r.order)).toEqual(['first', 'latest', 'latest', 'latest'])
    expect(report.totals.events).toMatchObject({ handled: 3, duplicate: 1, refused: 0, failed: 0 })

    const again = await reconcile([email])
    expect(outcomes(again)?.map(([, outcome]) => outcome)).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate'])
    expect(runs).toHaveLength(4)
  })

  it("builds the sender's envelope with a deterministic UUID v5 id, the email id set after the details, and the reconcile index; signed with the secret", async () => {
    const { sender, posts, reconcile, emit, setEnabled } = setup({
      rewriteEmail: (email) => ({ ...email, events: email.events.map((e) => ({ ...e, details: { ...e.details, id: 'not-the-email' } })) }),
    })
    await setEnabled(false)
    const email = crypto.randomUUID()
    const event = emit(email, 'email.bounced', { recipient: 'ann@example.com', smtp: '550 5.1.1' })
    await sender.idle()
    const report = await reconcile([email])
    expect(posts).toHaveLength(1)
    const post = posts[0] as Request
    const body = await post.text()
    const ms = Date.parse(event.created_at)
    const id = await reconcileEventId(email, 'email.bounced', ms, 0)
    expect(JSON.parse(body)).toEqual({
      id,
      type: 'email.bounced',
      created_at: event.created_at,
      data: { recipient: 'ann@example.com', smtp: '550 5.1.1', id: email },
      [RECONCILE_FIELD]: { index: 0 },
    })
    expect(report.emails[0]?.events[0]).toMatchObject({ eventId: id, index: 0, outcome: 'handled', status: 200, attempts: 1 })
    const headers = Object.fromEntries(post.headers)
    expect(headers['webhook-id']).toBe(id)
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5)
    await expect(verifyWebhook({ headers, body, secret: TEST_SECRET })).resolves.toMatchObject({ id })
    expect(post.redirect).toBe('manual')
  })

  it('gives the same id to the same entry on every run (a known UUID v5 vector), and another to the next index', async () => {
    const email = '0c1f6d2e-6b53-4f4e-9a77-1b8f1d8c2a10'
    expect(await reconcileEventId(email, 'email.bounced', 1767225600000, 0)).toBe('0c144790-9146-5b40-ab0e-a91d96a96847')
    expect(await reconcileEventId(email, 'email.bounced', 1767225600000, 1)).toBe('50c05858-6f78-5688-ba4e-f9b7538556a8')
  })

  it('numbers two events of one type in one millisecond in list order: the one the sender delivered is a duplicate, the other runs once', async () => {
    const { sender, runs, reconcile, setEnabled } = setup()
    const email = crypto.randomUUID()
    const at = new Date().toISOString()
    const accepted = (recipient: string): WebhookEvent => ({
      id: crypto.randomUUID(),
      type: 'email.recipient_accepted',
      created_at: at,
      data: { id: email, recipient },
    })
    sender.emit({ event: accepted('bob@example.com') })
    await sender.idle()
    await setEnabled(false)
    sender.emit({ event: accepted('ann@example.com') })
    await sender.idle()
    const report = await reconcile([email])
    expect(report.emails[0]?.events.map((e) => [e.index, e.outcome])).toEqual([
      [0, 'duplicate'],
      [1, 'handled'],
    ])
    expect(runs.map((r) => [r.recipient, r.source])).toEqual([
      ['bob@example.com', 'sender'],
      ['ann@example.com', 'reconcile'],
    ])
  })

  it("does not send events older than the receiver's retention: reported too_old, per email", async () => {
    const { sender, posts, reconcile, setEnabled } = setup()
    await setEnabled(false)
    const email = crypto.randomUUID()
    const old = new Date(Date.now() - DEFAULT_RETENTION_MS - 60_000).toISOString()
    sender.emit({ event: { id: crypto.randomUUID(), type: 'email.queued', created_at: old, data: { id: email } } })
    sender.emit({ type: 'email.submitted', data: { id: email } })
    await sender.idle()
    expect(DEFAULT_RECONCILE_RETENTION_MS).toBe(DEFAULT_RETENTION_MS)
    const report = await reconcile([email])
    expect(outcomes(report)).toEqual([
      ['email.submitted', 'handled'],
      ['email.queued', 'too_old'],
    ])
    expect(report.emails[0]?.events[1]?.message).toMatch(/older than the receiver's retention \(7 d, less 5 min for clocks\)/)
    expect(report.emails[0]?.status).toBe('reconciled')
    expect(posts).toHaveLength(1)
    // A receiver that keeps 30 days: the old one goes too (a duplicate check is possible).
    const longer = await reconcile([email], { retentionMs: 30 * 86_400_000 })
    expect(outcomes(longer)).toEqual([
      ['email.queued', 'handled'],
      ['email.submitted', 'duplicate'],
    ])
  })

  it('lists in a dry run every event it would send, also those the receiver handled, and sends nothing', async () => {
    const { sender, posts, reconcile, emit, setEnabled } = setup()
    const email = crypto.randomUUID()
    emit(email, 'email.queued')
    await sender.idle()
    await setEnabled(false)
    emit(email, 'email.submitted')
    const sent = posts.length
    const report = await reconcile([email], { dryRun: true, secret: undefined })
    expect(report.dryRun).toBe(true)
    expect(report.emails[0]?.status).toBe('dry_run')
    expect(outcomes(report)).toEqual([
      ['email.queued', 'would_send'],
      ['email.submitted', 'would_send'],
    ])
    expect(posts).toHaveLength(sent)
  })

  it('skips emails created before since', async () => {
    const { sender, posts, reconcile, emit } = setup()
    const email = crypto.randomUUID()
    emit(email, 'email.queued')
    await sender.idle()
    const sent = posts.length
    const report = await reconcile([email], { since: Date.now() + 60_000 })
    expect(report.emails[0]).toMatchObject({ status: 'before_since', events: [] })
    expect(report.since).toMatch(/^\d{4}-/)
    expect(posts).toHaveLength(sent)
  })
})

describe('reconcileEmails: bad input, reported per email, never a crash nor a guessed event', () => {
  it('an id that is not a UUID, an unknown or foreign email (404), and unusable entries of an events list', async () => {
    const { sender, runs, reconcile, emit, setEnabled } = setup({
      rewriteEmail: (email) => ({
        ...email,
        extra_field: 'kept',
        events: [
          ...email.events,
          'junk',
          { type: 'email.bounced' },
          { created_at: email.created_at },
          { type: 'email.bounced', created_at: 'yesterday' },
          { type: 'organization.updated', created_at: email.created_at },
          { type: 'email.deferred', created_at: email.created_at, details: 'not an object' },
        ],
      }),
    })
    await setEnabled(false)
    const email = crypto.randomUUID()
    emit(email, 'email.queued')
    await sender.idle()
    const unknown = crypto.randomUUID()
    const report = await reconcile(['not-a-uuid', unknown, email, email.toUpperCase()])
    expect(report.repeatedIds).toBe(1)
    expect(report.emails.map((e) => [e.emailId, e.status])).toEqual([
      ['not-a-uuid', 'invalid_id'],
      [unknown, 'not_found'],
      [email, 'incomplete'],
    ])
    expect(report.emails[0]?.error?.message).toContain('is not an email id (a UUID')
    expect(report.emails[1]?.error).toMatchObject({ status: 404, code: 'not_found' })
    expect(report.emails[1]?.error?.message).toContain("outside the plan's log-retention window, or another organization's email")
    expect(report.emails[2]?.invalidEntries.map((e) => [e.entry, e.problem])).toEqual([
      [1, 'not_an_object'],
      [2, 'created_at_missing'],
      [3, 'type_missing'],
      [4, 'created_at_unparseable'],
      [5, 'type_not_email'],
      [6, 'details_not_an_object'],
    ])
    // The usable entry went through; nothing was made up for the others.
    expect(outcomes(report, 2)).toEqual([['email.queued', 'handled']])
    expect(runs.map((r) => r.type)).toEqual(['email.queued'])
    expect(report.totals).toMatchObject({ invalidEntries: 6, emails: { invalid_id: 1, not_found: 1, incomplete: 1 } })
  })
})

describe('reconcileEmails: the API and the receiver failing', () => {
  it('reports a read still rate limited after the client retries (429, backoff with jitter) for that email only', async () => {
    const retries: number[] = []
    const { sender, reconcile, emit } = setup({ client: { maxRetries: 1, onRetry: (info) => retries.push(info.status) } })
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()]
    emit(a, 'email.queued')
    emit(b, 'email.queued')
    await sender.idle()
    sender.injectApiFaults({ status: 429 }, { status: 429 }, { status: 429 })
    const report = await reconcile([a, b], { concurrency: 1 })
    expect(retries).toEqual([429, 429])
    expect(report.emails.map((e) => e.status)).toEqual(['failed', 'reconciled'])
    expect(report.emails[0]?.error).toMatchObject({ status: 429, code: 'rate_limited', message: expect.stringContaining('rate limited') })
    expect(report.stopped).toBeUndefined()
  })

  it('stops when the key lacks emails:read (the message names the scope): the other emails are not started', async () => {
    const { sender, reconcile, emit } = setup({ client: { apiKey: WEBHOOKS_ONLY_KEY } })
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()]
    emit(a, 'email.queued')
    emit(b, 'email.queued')
    await sender.idle()
    const report = await reconcile([a, b], { concurrency: 1 })
    expect(report.stopped).toMatchObject({ by: 'api', emailId: a, status: 403, code: 'missing_scope' })
    expect(report.stopped?.message).toContain('lacks the scope emails:read')
    expect(report.emails.map((e) => e.status)).toEqual(['failed', 'not_started'])
    expect(JSON.stringify(report)).not.toContain(WEBHOOKS_ONLY_KEY)
  })

  it('refuses to go on when the receiver has ordering off (409 reconcile_unsupported): says to turn ordering on, nothing ran', async () => {
    const { sender, runs, reconcile, emit, setEnabled } = setup({ ordering: false })
    await setEnabled(false)
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()]
    emit(a, 'email.queued')
    emit(a, 'email.submitted')
    emit(b, 'email.queued')
    await sender.idle()
    const report = await reconcile([a, b], { concurrency: 1 })
    expect(report.emails[0]?.events.map((e) => [e.outcome, e.status, e.code])).toEqual([
      ['refused', 409, 'reconcile_unsupported'],
      ['not_sent', undefined, undefined],
    ])
    expect(report.emails[0]?.events[0]?.message).toMatch(/turn ordering: true on/)
    expect(report.stopped).toMatchObject({ by: 'receiver', status: 409, code: 'reconcile_unsupported' })
    expect(report.emails.map((e) => e.status)).toEqual(['incomplete', 'not_started'])
    expect(runs).toEqual([])
  })

  it('retries 409 in_flight and 5xx (bounded), then reports the event failed and holds back the later events of that email; the next run finishes it', async () => {
    let inFlightOnce = true
    const { sender, runs, failing, reconcile, emit, setEnabled } = setup({
      intercept: () => {
        if (!inFlightOnce) return undefined
        inFlightOnce = false
        return Response.json({ error: { code: 'in_flight', message: 'busy' } }, { status: 409, headers: { 'retry-after': '0' } })
      },
    })
    await setEnabled(false)
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()]
    emit(a, 'email.queued')
    emit(a, 'email.submitted')
    emit(a, 'email.bounced')
    emit(b, 'email.queued')
    await sender.idle()
    failing.add('email.submitted')
    const report = await reconcile([a, b], { concurrency: 1, maxAttempts: 3 })
    expect(report.emails[0]?.events.map((e) => [e.type, e.outcome, e.attempts])).toEqual([
      ['email.queued', 'handled', 2],
      ['email.submitted', 'failed', 3],
      ['email.bounced', 'not_sent', undefined],
    ])
    expect(report.emails[0]?.events[1]).toMatchObject({ status: 500, code: 'handler_failed' })
    expect(report.emails[0]?.events[2]?.message).toMatch(/an earlier event of this email was failed/)
    expect(report.emails.map((e) => e.status)).toEqual(['incomplete', 'reconciled'])
    expect(report.stopped).toBeUndefined()

    failing.clear()
    const again = await reconcile([a, b])
    expect(outcomes(again)?.map(([, outcome]) => outcome)).toEqual(['duplicate', 'handled', 'handled'])
    expect(runs.filter((r) => r.emailId === a).map((r) => r.type)).toEqual(['email.queued', 'email.submitted', 'email.bounced'])
  })

  it('reports a receiver that does not answer as failed after its attempts (network), with what to do', async () => {
    const { sender, reconcile, emit, setEnabled } = setup()
    await setEnabled(false)
    const email = crypto.randomUUID()
    emit(email, 'email.queued')
    await sender.idle()
    const report = await reconcile([email], {
      maxAttempts: 2,
      fetch: async () => {
        throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) })
      },
    })
    expect(report.emails[0]?.events[0]).toMatchObject({ outcome: 'failed', status: 0, code: 'network_error', attempts: 2 })
    expect(report.emails[0]?.events[0]?.message).toMatch(/no answer from the receiver after 2 attempts \(ECONNREFUSED\)/)
  })

  it('stops on Ctrl-C (signal): nothing starts after the abort, the error carries the report so far', async () => {
    const { sender, reconcile, emit } = setup()
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()]
    emit(a, 'email.queued')
    emit(b, 'email.queued')
    await sender.idle()
    const abort = new AbortController()
    const error = await reconcile([a, b], { concurrency: 1, signal: abort.signal, onEmail: () => abort.abort() }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ReconcileAbortedError)
    const report = (error as ReconcileAbortedError).report
    expect([report.aborted, report.emails.map((e) => e.status)]).toEqual([true, ['reconciled', 'not_started']])
    expect((error as ReconcileAbortedError).code).toBe('reconcile_aborted')
  })

  it('checks its options when called: the receiver URL, the secret (not needed for a dry run)', async () => {
    const { client } = setup()
    const base = { client, emailIds: [], receiverUrl: RECEIVER }
    await expect(reconcileEmails({ ...base, receiverUrl: 'ftp://x' })).rejects.toThrow(/receiverUrl must be an absolute http/)
    await expect(reconcileEmails({ ...base, secret: ' spaced ' })).rejects.toThrow(/white space/)
    await expect(reconcileEmails(base)).rejects.toThrow(/needs secret: the endpoint secret/)
    await expect(reconcileEmails({ ...base, dryRun: true })).resolves.toMatchObject({ dryRun: true, emails: [] })
  })
})
