/**
 * `email-webhooks emails reconcile` against the faithful sender's API and a core receiver (ordering
 * on), both on 127.0.0.1: events emitted while the endpoint was disabled are handled, the rest are
 * duplicates, a second run handles nothing; --dry-run lists and sends nothing; ids from a file or
 * stdin; bad ids, unknown emails, rate limits and a receiver with ordering off are reported per
 * email with the right exit code; the API key and the secret are never printed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EMAIL_EVENT_TYPES, type EventSource, emailWebhook, MemoryDedupStore, type WebhookEvent } from '@email-webhooks/core'
import { createFaithfulSender, type FaithfulSender, listenSender, type SenderListener } from '@email-webhooks/core/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { HAS_SCRIPT, runCli, runCliInTty, SECRET } from './helpers/cli.js'

const KEY = `ek_cli_${crypto.randomUUID().replaceAll('-', '')}`
let dir: string
const closers: Array<() => unknown> = []
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-reconcile-'))
})
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

interface Setup {
  sender: FaithfulSender
  api: SenderListener
  receiverUrl: string
  runs: { type: string; source: EventSource }[]
  posts: () => number
  failing: Set<string>
  /** Emits `types` for a new email: the first while the endpoint is enabled, the rest while it is disabled. */
  email(types: string[]): Promise<string>
}

async function setup(options: { ordering?: boolean; mode?: 'inbox' } = {}): Promise<Setup> {
  const runs: Setup['runs'] = []
  const failing = new Set<string>()
  let posts = 0
  const record = (event: WebhookEvent, ctx: { source: EventSource }) => {
    if (failing.has(event.type)) throw new Error('down (simulated)')
    runs.push({ type: event.type, source: ctx.source })
  }
  const handler = emailWebhook(SECRET, Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, record])), {
    store: new MemoryDedupStore(),
    ordering: options.ordering ?? true,
    logger: false,
    ...(options.mode ? { mode: options.mode, inbox: { pollMs: 5 } } : {}),
  })
  closers.push(() => handler.inbox?.stop())
  const receiver = await listenSender({
    fetch: (request) => {
      posts++
      return handler(request)
    },
  })
  const receiverUrl = `${receiver.url}/hooks`
  const sender = createFaithfulSender({
    apiKeys: { [KEY]: ['webhooks:manage', 'emails:read'] },
    timeScale: 0.0005,
    fetch: (input, init) => handler(new Request(input, init)),
  })
  const api = await listenSender(sender)
  closers.push(
    () => receiver.close(),
    () => sender.close(),
    () => api.close(),
  )
  const { id: endpointId } = sender.createEndpoint(receiverUrl, { secret: SECRET })
  const setEnabled = (enabled: boolean) =>
    sender.fetch(
      new Request(`${api.baseUrl}/webhooks/${endpointId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled }),
      }),
    )
  return {
    sender,
    api,
    receiverUrl,
    runs,
    posts: () => posts,
    failing,
    async email(types) {
      const id = crypto.randomUUID()
      for (const [i, type] of types.entries()) {
        if (i === 1) await setEnabled(false)
        sender.emit({ type, data: { id } })
        await sender.idle()
      }
      await setEnabled(true)
      return id
    },
  }
}

async function idsFile(lines: string[]): Promise<string> {
  const path = join(dir, `ids-${crypto.randomUUID()}.txt`)
  await writeFile(path, `${lines.join('\n')}\n`)
  return path
}

async function reconcile(s: Setup, args: string[], options: { env?: Record<string, string>; input?: string } = {}) {
  const result = await runCli(['emails', 'reconcile', s.receiverUrl, ...args], {
    env: { EMAIL_API_KEY: KEY, EMAIL_API_URL: s.api.baseUrl, EMAIL_WEBHOOK_SECRET: SECRET, ...options.env },
    cwd: dir,
    ...(options.input === undefined ? {} : { input: options.input }),
  })
  expect(result.stdout + result.stderr).not.toContain(KEY)
  return result
}

describe('emails reconcile', () => {
  it('handles the events the receiver missed, says the rest were already handled, and handles nothing the second time', async () => {
    const s = await setup()
    const a = await s.email(['email.queued', 'email.submitted', 'email.bounced'])
    const b = await s.email(['email.queued'])
    const file = await idsFile(['# emails of the campaign', a, '', b])
    const result = await reconcile(s, ['--ids', file])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(
      /^2 email ids → http:\/\/127\.0\.0\.1:\d+\/hooks \(key from EMAIL_API_KEY, secret from EMAIL_WEBHOOK_SECRET\)/,
    )
    expect(result.stdout).toMatch(new RegExp(`${a}\\s+already handled\\s+email\\.queued`))
    expect(result.stdout).toMatch(new RegExp(`${a}\\s+handled\\s+email\\.submitted`))
    expect(result.stdout).toContain(
      'Summary: 2 emails (2 reconciled); events: 2 handled, 2 already handled, 0 refused, 0 failed, 0 not sent, 0 too old to check',
    )
    expect(s.runs.map((r) => [r.type, r.source])).toEqual([
      ['email.queued', 'sender'],
      ['email.queued', 'sender'],
      ['email.submitted', 'reconcile'],
      ['email.bounced', 'reconcile'],
    ])
    const again = await reconcile(s, ['--ids', file, '--json'])
    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout).totals.events).toMatchObject({ handled: 0, duplicate: 4 })
    expect(s.runs).toHaveLength(4)
  })

  it('never prints the user and password of a receiver URL, in text or --json', async () => {
    const s = await setup()
    const a = await s.email(['email.queued', 'email.submitted'])
    const withCredentials = s.receiverUrl.replace('http://', 'http://ops:hunter2@')
    for (const json of [[], ['--json']]) {
      const result = await runCli(['emails', 'reconcile', withCredentials, '--ids', await idsFile([a]), '--dry-run', ...json], {
        env: { EMAIL_API_KEY: KEY, EMAIL_API_URL: s.api.baseUrl, EMAIL_WEBHOOK_SECRET: '' },
        cwd: dir,
      })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout + result.stderr).not.toMatch(/hunter2|ops:/)
      if (json.length > 0) expect(JSON.parse(result.stdout).receiverUrl).toBe(s.receiverUrl)
    }
  })

  it('--dry-run lists every event it would send, per email, says why it cannot know what was handled, and sends nothing (no secret needed)', async () => {
    const s = await setup()
    const a = await s.email(['email.queued', 'email.submitted'])
    const posted = s.posts()
    const result = await reconcile(s, ['--ids', await idsFile([a]), '--dry-run'], { env: { EMAIL_WEBHOOK_SECRET: '' } })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(new RegExp(`${a}\\s+would send\\s+email\\.queued`))
    expect(result.stdout).toMatch(new RegExp(`${a}\\s+would send\\s+email\\.submitted`))
    expect(result.stdout).toContain('events: 2 would be sent, 0 too old to check')
    expect(result.stdout).toContain('the receiver answers those it already handled as duplicates')
    expect(s.posts()).toBe(posted)
  })

  it('reads ids from stdin; an id that is not a UUID and a failing event exit 1, an unknown email is reported, --json has the report', async () => {
    const s = await setup()
    const a = await s.email(['email.queued', 'email.submitted', 'email.bounced'])
    s.failing.add('email.submitted')
    const unknown = crypto.randomUUID()
    const result = await reconcile(s, ['--ids', '-', '--json', '--timeout', '5000'], { input: `${a}\nnot-an-id\n${unknown}\n` })
    expect(result.code).toBe(1)
    const report = JSON.parse(result.stdout)
    expect(report.emails.map((e: { status: string }) => e.status)).toEqual(['incomplete', 'invalid_id', 'not_found'])
    expect(report.emails[0].events.map((e: { outcome: string }) => e.outcome)).toEqual(['duplicate', 'failed', 'not_sent'])
    expect(report.emails[0].events[1]).toMatchObject({ status: 500, code: 'handler_failed', attempts: 4 })
    expect(JSON.stringify(report)).not.toContain(SECRET)
  }, 60_000)

  it('stops when the receiver has ordering off, saying once to turn it on (not in every row); nothing ran', async () => {
    const s = await setup({ ordering: false })
    const ids = [await s.email(['email.queued', 'email.submitted'])]
    for (let i = 0; i < 5; i++) ids.push(await s.email(['email.queued', 'email.bounced']))
    const result = await reconcile(s, ['--ids', await idsFile(ids)])
    expect(result.code).toBe(1)
    // Emails in flight at once each got the 409: every row says so, the advice comes once.
    const refused = result.stdout.split('\n').filter((line) => /\srefused\s/.test(line))
    expect(refused.length).toBeGreaterThanOrEqual(1)
    for (const line of refused) expect(line).toMatch(/409 reconcile_unsupported: the answer the run stopped on \(what to do: below\)$/)
    expect((result.stdout + result.stderr).match(/turn ordering: true on/g)).toHaveLength(1)
    expect(result.stderr).toMatch(
      /stopped at email \S+: 409 reconcile_unsupported: the receiver cannot recognise reconciled events: turn ordering: true on.*the receiver would refuse the rest the same way; \d emails? not started/,
    )
    expect(s.runs.filter((r) => r.source === 'reconcile')).toEqual([])
  })

  it('says queued, not handled, for the events an inbox-mode receiver recorded to handle after the answer', async () => {
    const s = await setup({ mode: 'inbox' })
    const a = await s.email(['email.queued', 'email.submitted'])
    const file = await idsFile([a])
    const result = await reconcile(s, ['--ids', file])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(
      new RegExp(
        `${a}\\s+queued\\s+email\\.submitted\\s+\\S+\\s+recorded in its inbox \\(inbox mode\\): its handlers run after the answer`,
      ),
    )
    expect(result.stdout).not.toMatch(/\shandled\s+email\./)
    expect(result.stdout).toContain('events: 0 handled, 2 queued (inbox mode: handled after the answer), 0 already handled')
    const json = await reconcile(s, ['--ids', file, '--json'])
    // The second run: both are known to the receiver's inbox.
    expect(JSON.parse(json.stdout).totals.events).toMatchObject({ handled: 0, duplicate: 2 })
    // The worker ran each event once, whichever path brought it: queued by the sender, submitted by reconcile.
    await expect
      .poll(() => s.runs.map((r) => [r.type, r.source]))
      .toEqual([
        ['email.queued', 'sender'],
        ['email.submitted', 'reconcile'],
      ])
  })

  it('reports an email still rate limited after the retries (429), and goes on with the others', async () => {
    const s = await setup()
    const [a, b] = [await s.email(['email.queued', 'email.submitted']), await s.email(['email.queued'])]
    s.sender.injectApiFaults(...Array.from({ length: 4 }, () => ({ status: 429, retryAfter: '0' })))
    const result = await reconcile(s, ['--ids', await idsFile([a, b]), '--concurrency', '1'])
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(new RegExp(`${a}\\s+read failed\\s+—\\s+—\\s+rate limited \\(429\\) after 4 attempts`))
    expect(result.stdout).toContain('Summary: 2 emails (1 reconciled, 1 read failed)')
  })

  it('skips emails created before --since, and refuses bad options and a missing key with exit 2', async () => {
    const s = await setup()
    const a = await s.email(['email.queued'])
    const file = await idsFile([a])
    const later = await reconcile(s, ['--ids', file, '--since', new Date(Date.now() + 60_000).toISOString()])
    expect([later.code, later.stdout]).toEqual([0, expect.stringMatching(new RegExp(`${a}\\s+before --since`))])
    for (const [args, message] of [
      [
        ['--ids', file, '--since', 'yesterday'],
        "option '--since <time>' argument 'yesterday' is invalid. Give a date-time with an offset (2026-11-20T08:00:00Z), a date (2026-11-20, UTC) or an age (48h, 7d).",
      ],
      [['--ids', file, '--retention', '7'], "option '--retention <duration>' argument '7' is invalid. Give a duration such as 7d"],
      [[], "required option '--ids <file>' not specified"],
    ] as const) {
      const bad = await reconcile(s, [...args])
      expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining(message)])
    }
    const unknown = await reconcile(s, ['--ids', await idsFile([crypto.randomUUID(), crypto.randomUUID()])])
    expect([unknown.code, unknown.stderr]).toEqual([
      0,
      expect.stringContaining('warning: none of the 2 emails was found: check that EMAIL_API_URL'),
    ])
    const noKey = await reconcile(s, ['--ids', file], { env: { EMAIL_API_KEY: '' } })
    expect([noKey.code, noKey.stderr]).toEqual([2, expect.stringContaining('a server-side key with the scope emails:read')])
  })

  it.runIf(HAS_SCRIPT)('shows progress on a terminal and never the key or the secret', async () => {
    const s = await setup()
    const a = await s.email(['email.queued', 'email.submitted'])
    const { code, output } = await runCliInTty(['emails', 'reconcile', s.receiverUrl, '--ids', await idsFile([a])], {
      EMAIL_API_KEY: KEY,
      EMAIL_API_URL: s.api.baseUrl,
      EMAIL_WEBHOOK_SECRET: SECRET,
      NO_COLOR: '1',
    })
    expect(code).toBe(0)
    expect(output).toMatch(/1\/1 emails \| handled 1 \| already handled 1 \| problems 0/)
    expect(output).not.toContain(KEY)
  })
})
