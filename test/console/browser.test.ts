/**
 * The console in a real browser (Debian's Chromium through playwright-core, browser.ts), served by
 * the Express example (examples/console: an inbox-mode receiver and the console in one app) on
 * SQLite, PostgreSQL and Redis: every page renders, search finds an event by id, an email's story
 * links its events, a payload stays hidden until asked, a dead letter retried from the page is
 * handled once by the worker, a plan step counts before retrying every match, a stopped server
 * shows on the page. Then, on SQLite: 401 without credentials, a cross-site form POST refused,
 * hostile ids, types and errors escaped (no dialog, no element they name), a store without an
 * inbox, unknown ids, and the CLI's one-time link. With UPDATE_SCREENSHOTS=1 the SQLite run writes
 * the screenshots of docs/console.md into docs/console/ (else into a temporary folder).
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { DedupStore } from '@email-webhooks/core'
import { consoleRequestFromNode, emailWebhookConsole, writeConsoleResponse } from '@email-webhooks/core/console'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createEvent, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../examples/console/src/app.js'
import { type RunningServer, startPostgres, startRedis } from '../services/servers.js'
import { launchChromium } from './browser.js'
import { CREDENTIALS, deadEntries, inboxOf, item, PASSWORD, USER } from './helpers.js'

const ROOT = resolve(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'console-browser-'))
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs/console') : join(dir, 'shots')
mkdirSync(SHOTS, { recursive: true })
let browser: Browser
let postgres: RunningServer
let redis: RunningServer

beforeAll(async () => {
  ;[browser, postgres, redis] = await Promise.all([launchChromium(), startPostgres(), startRedis()])
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await Promise.all([postgres?.stop(), redis?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

function listen(server: Server): Promise<{ base: string; close: () => Promise<void> }> {
  return new Promise((done) =>
    server.listen(0, '127.0.0.1', () =>
      done({
        base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: async () => {
          server.closeAllConnections()
          await new Promise((closed) => server.close(closed))
        },
      }),
    ),
  )
}

/** The core console alone on a Node server (no receiver, no worker). */
function serveConsole(handle: (request: Request) => Promise<Response>) {
  return listen(
    createServer(async (req, res) => {
      await writeConsoleResponse(res, await handle(await consoleRequestFromNode(req, { path: req.url ?? '/' })))
    }),
  )
}

async function signedIn(base: string): Promise<{ context: BrowserContext; page: Page; dialogs: string[] }> {
  const context = await browser.newContext({
    httpCredentials: { username: USER, password: PASSWORD, origin: base },
    viewport: { width: 1280, height: 860 },
  })
  const page = await context.newPage()
  const dialogs: string[] = []
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  return { context, page, dialogs }
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The text of an element as the browser renders it (Playwright's innerText, not the DOM property the lint rule means). */
// biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText(): the rendered text, hidden parts left out
const shown = (locator: Locator) => locator.innerText()
const main = (page: Page) => shown(page.locator('main'))

describe.each(['sqlite', 'postgres', 'redis'] as const)('the console in Chromium on %s', (kind) => {
  it('renders every page, finds an event, keeps payloads hidden, and retries dead letters that the worker then handles once', {
    timeout: 120_000,
  }, async () => {
    const store: DedupStore =
      kind === 'sqlite'
        ? new SqliteDedupStore({ path: join(dir, 'browser.db') })
        : kind === 'postgres'
          ? new PostgresDedupStore({ connectionString: postgres.url })
          : new RedisDedupStore({ url: redis.url })
    let failing = true
    const runs: string[] = []
    const { app, webhook } = createApp({
      secret: TEST_SECRET,
      consolePassword: PASSWORD,
      store,
      inbox: { maxAttempts: 1, pollMs: 50, retryBaseMs: 1 },
      handlers: {
        'email.bounced': (event) => {
          runs.push(`${event.id}:${failing ? 'failed' : 'ok'}`)
          if (failing) throw new Error('the suppression service answered 503')
        },
      },
    })
    const { base, close } = await listen(createServer(app))
    const { context, page, dialogs } = await signedIn(base)
    try {
      const email = `0195f3c2-${kind.padEnd(4, '0').slice(0, 4)}-7000-8000-00000000000${kind.length}`
      const minute = (m: number) => new Date(Date.now() - 30 * 60_000 + m * 60_000).toISOString()
      const send = async (type: string, at: string, data: Record<string, unknown> = {}, secret = TEST_SECRET) => {
        const event = createEvent(type, { created_at: at, data: { id: email, ...data } })
        const delivery = await createSignedDelivery({ event, secret })
        const answer = await fetch(`${base}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body })
        return { id: event.id, status: answer.status, delivery }
      }
      const queued = await send('email.queued', minute(1))
      const submitted = await send('email.submitted', minute(2))
      await send('email.recipient_accepted', minute(3), { recipient: 'alice@example.com' })
      const bounced = await send('email.bounced', minute(4), { recipient: 'alice@example.com' })
      await fetch(`${base}/hooks`, { method: 'POST', headers: submitted.delivery.headers, body: submitted.delivery.body })
      expect((await send('email.queued', minute(5), {}, 'whsec_not_the_secret_at_all')).status).toBe(401)
      const others = [
        await send('email.bounced', minute(6), { id: `${email}-b` }),
        await send('email.bounced', minute(7), { id: `${email}-c` }),
      ]
      const inbox = store.inbox
      if (!inbox) throw new Error('no inbox')
      const stateOf = async (id: string) => (await inbox.get(`default:${id}`))?.state
      await until(async () => (await stateOf(bounced.id)) === 'dead' && (await stateOf(queued.id)) === 'done', 'the worker')
      await until(async () => (await Promise.all(others.map((o) => stateOf(o.id)))).every((s) => s === 'dead'), 'the other dead letters')
      const shot = (name: string) => (kind === 'sqlite' ? page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true }) : undefined)

      const overview = await page.goto(`${base}/webhooks-console/`)
      expect(overview?.status()).toBe(200)
      expect(await shown(page.locator('h1'))).toBe('Overview')
      expect(await page.locator('figure.chart svg').count()).toBeGreaterThan(0)
      expect(await main(page)).toMatch(/3\s+dead letters/)
      await shot('overview')

      await page.getByRole('link', { name: 'Find', exact: true }).click()
      await page.fill('input[name=q]', submitted.id)
      await page.getByRole('button', { name: 'Find' }).click()
      expect(await main(page)).toContain(`Event ${submitted.id}: handled`)
      await shot('find')
      await page.locator(`main a[href$="/events/${submitted.id}"]`).first().click()
      expect(await main(page)).toMatch(/handled, recorded as done at about/)
      await page.locator(`main a[href$="/emails/${email}"]`).first().click()
      const story = await main(page)
      expect(story.indexOf('email.queued')).toBeLessThan(story.indexOf('email.submitted'))
      expect(story.indexOf('email.submitted')).toBeLessThan(story.indexOf('email.recipient_accepted'))
      expect(story).toContain('dead letter: the worker gave up')
      expect(story).toMatch(/Message status\s+submitted/)
      await shot('email')

      await page.getByRole('link', { name: 'Dead letters', exact: true }).click()
      expect(await main(page)).toContain(bounced.id)
      expect(await page.content()).not.toContain('alice@example.com')
      await shot('dead')
      await page.locator(`main a[href$="/events/${bounced.id}"]`).click()
      expect(await page.content()).not.toContain('alice@example.com')
      await shot('event')
      await page.getByRole('button', { name: 'Show payload' }).click()
      expect(await shown(page.locator('pre.payload'))).toContain('"recipient": "alice@example.com"')
      expect(page.url()).not.toContain('alice')

      failing = false
      await page.goto(`${base}/webhooks-console/dead`)
      await page.locator(`button[name=one][value="default:${bounced.id}"]`).click()
      await page.waitForURL(/\/dead\?retried=1$/)
      expect(await main(page)).toContain('1 dead letter made pending again: a worker takes them now.')
      await until(async () => (await stateOf(bounced.id)) === 'done', 'the retried entry')

      await page.fill('input[name=type]', 'email.bounced')
      await page.getByRole('button', { name: 'Filter' }).click()
      await page.getByRole('link', { name: /Retry every dead letter that matches/ }).click()
      expect(await main(page)).toContain('2 dead letters of type email.bounced would be made pending again')
      await shot('plan')
      await page.getByRole('button', { name: 'Retry 2' }).click()
      expect(await main(page)).toContain('2 dead letters made pending again (the plan counted 2)')
      await until(async () => (await Promise.all(others.map((o) => stateOf(o.id)))).every((s) => s === 'done'), 'the planned retries')
      await new Promise((r) => setTimeout(r, 200))
      for (const id of [bounced.id, ...others.map((o) => o.id)])
        expect(runs.filter((run) => run.startsWith(`${id}:`))).toEqual([`${id}:failed`, `${id}:ok`])
      expect(dialogs).toEqual([])

      if (kind !== 'sqlite') {
        const server = kind === 'postgres' ? postgres : redis
        await server.halt('crash')
        try {
          for (const path of ['/', '/dead', `/emails/${email}`]) {
            expect((await page.goto(`${base}/webhooks-console${path}`))?.status()).toBe(200)
            expect(await main(page)).toContain('The store did not answer')
          }
        } finally {
          await server.start()
        }
      }
    } finally {
      await context.close()
      await webhook.inbox?.stop()
      await close()
      await store.close?.()
    }
  })
})

describe('the console in Chromium: refusals and bad input', () => {
  it('answers 401 to a browser without credentials, and shows nothing of the store', async () => {
    const store = new SqliteDedupStore({ path: join(dir, 'refusals.db') })
    await deadEntries(inboxOf(store), [item('secret-ish-1', 'email.bounced')], 'boom')
    const basic = await serveConsole(emailWebhookConsole({ store, auth: CREDENTIALS }))
    const own = await serveConsole(emailWebhookConsole({ store, auth: (request) => request.headers.get('cookie') === 'session=admin' }))
    const context = await browser.newContext()
    const page = await context.newPage()
    // Basic auth: Chromium gets the challenge and, with no credentials to give, stops at the 401.
    const challenged = page.waitForResponse(`${basic.base}/dead`)
    await page.goto(`${basic.base}/dead`).catch(() => undefined)
    const answer = await challenged
    expect(answer.status()).toBe(401)
    expect(await answer.text()).not.toContain('secret-ish-1')
    // An auth function of the app's: the browser shows the 401 page.
    expect((await page.goto(`${own.base}/dead`))?.status()).toBe(401)
    expect(await shown(page.locator('h1'))).toBe('Sign in')
    expect(await page.content()).not.toContain('secret-ish-1')
    await context.close()
    await Promise.all([basic.close(), own.close()])
    await store.close()
  })

  it('refuses a form posted from another site, and the dead letter stays dead', async () => {
    const store = new SqliteDedupStore({ path: join(dir, 'csrf.db') })
    await deadEntries(inboxOf(store), [item('victim-1', 'email.bounced')], 'boom')
    const target = await serveConsole(emailWebhookConsole({ store, auth: CREDENTIALS, actions: true }))
    const attacker = await listen(
      createServer((_req, res) => {
        res.setHeader('content-type', 'text/html')
        res.end(
          `<form method="post" action="${target.base}/dead/retry"><input name="csrf" value="guessed"><input name="one" value="default:victim-1"></form><script>document.forms[0].submit()</script>`,
        )
      }),
    )
    // The attacker's page is on another site (localhost, not 127.0.0.1); the browser is signed in to the console.
    const { context, page } = await signedIn(target.base)
    const attack = attacker.base.replace('127.0.0.1', 'localhost')
    const refused = page.waitForResponse((r) => r.url().endsWith('/dead/retry') && r.status() !== 401)
    await page.goto(attack)
    expect((await refused).status()).toBe(403)
    expect(await shown(page.locator('h1'))).toBe('Refused')
    expect((await inboxOf(store).get('default:victim-1'))?.state).toBe('dead')
    await context.close()
    await attacker.close()
    await target.close()
    await store.close()
  })

  it('escapes hostile ids, types, error messages and query strings: no dialog, no element they name', async () => {
    const store = new SqliteDedupStore({ path: join(dir, 'hostile.db') })
    const id = `<img src=x onerror=alert('id')>`
    const type = `"><script>alert('type')</script>`
    const email = `<svg onload=alert('email')>`
    await deadEntries(inboxOf(store), [item(id, type, email)], `<iframe src="javascript:alert('error')"></iframe>`)
    const { base, close } = await serveConsole(emailWebhookConsole({ store, auth: CREDENTIALS, actions: true }))
    const { context, page, dialogs } = await signedIn(base)
    const e = encodeURIComponent
    for (const path of [
      '/dead',
      '/find?state=dead',
      `/events/${e(id)}`,
      `/emails/${e(email)}`,
      `/find?q=${e(type)}`,
      `/dead/plan?do=retry&type=${e(type)}`,
      `/dead?type=${e(type)}`,
    ]) {
      expect((await page.goto(`${base}${path}`))?.status(), path).toBe(200)
      expect(await page.locator('script, img, iframe, main svg').count(), path).toBe(0)
    }
    await page.goto(`${base}/dead`)
    const text = await main(page)
    for (const shown of [id, type, `<iframe src="javascript:alert('error')"></iframe>`]) expect(text).toContain(shown)
    expect(dialogs).toEqual([])
    await context.close()
    await close()
    await store.close()
  })

  it('says so on every page of a store without an inbox, and on unknown ids', async () => {
    const never = () => new Promise<never>(() => {})
    const bare: DedupStore = { claim: never, complete: never, release: never, lookup: async () => 'absent' }
    const { base, close } = await serveConsole(emailWebhookConsole({ store: bare, auth: CREDENTIALS }))
    const { context, page } = await signedIn(base)
    for (const path of ['/', '/find', '/dead']) {
      await page.goto(`${base}${path}`)
      expect(await main(page), path).toMatch(/has no inbox/)
    }
    await page.goto(`${base}/events/0195f3c2-0000-7000-8000-000000000000`)
    expect(await main(page)).toContain('absent: never received here')
    await page.goto(`${base}/emails/unknown-email`)
    expect(await main(page)).toContain('The store keeps nothing under this email id')
    expect((await page.goto(`${base}/no-such-page`))?.status()).toBe(404)
    await context.close()
    await close()
  })

  it('opens the CLI console from its one-time link, which then stops working', { timeout: 60_000 }, async () => {
    const path = join(dir, 'cli.db')
    const seeded = new SqliteDedupStore({ path })
    await deadEntries(inboxOf(seeded), [item('cli-1', 'email.bounced')], 'boom')
    await seeded.close()
    const child = spawn(process.execPath, [join(ROOT, 'packages/cli/bin/email-webhooks.js'), 'console', '--store', path], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    try {
      const link = await new Promise<string>((done, fail) => {
        let out = ''
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          const line = /^(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)$/m.exec(out)?.[1]
          if (line) done(line)
        })
        child.once('exit', (code) => fail(new Error(`the CLI exited (${code})`)))
      })
      const context = await browser.newContext()
      const page = await context.newPage()
      await page.goto(link)
      expect(page.url()).toBe(`${new URL(link).origin}/`)
      expect(await shown(page.locator('h1'))).toBe('Overview')
      await page.getByRole('link', { name: 'Dead letters', exact: true }).click()
      expect(await main(page)).toContain('cli-1')
      const other = await browser.newContext()
      const again = await (await other.newPage()).goto(link)
      expect(again?.status()).toBe(401)
      await Promise.all([context.close(), other.close()])
    } finally {
      child.kill('SIGTERM')
      await new Promise((done) => child.once('exit', done))
    }
  })
})
