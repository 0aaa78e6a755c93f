/**
 * The walkthrough of the command line guide (docs/guides/cli.md, formerly this package's README), end to end, with real processes on 127.0.0.1: the Express example
 * (ordering on, a SQLite file) receives from `email-webhooks sender`; the receiver is stopped, the
 * sender disables the endpoint after its failures and emits more events with no delivery record;
 * the receiver starts again; `endpoint recover` re-enables the endpoint and retries what was not
 * delivered; `emails reconcile` brings the events emitted while it was disabled; a second
 * reconcile handles nothing, and every email's handler ran exactly once.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, runCli, SECRET } from './helpers/cli.js'
import { expressReceiver, type Receiver, type SenderLine, type SenderProcess, startSender } from './helpers/sender.js'

const GUIDE = readFileSync(resolve(import.meta.dirname, '../../../docs/guides/cli.md'), 'utf8')
const EMAILS = 20

let dir: string
let receiver: Receiver
let sender: SenderProcess | undefined
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-walkthrough-'))
  receiver = expressReceiver(await freePort(), join(dir, 'walkthrough.db'))
})
afterAll(async () => {
  if (sender?.child.exitCode === null) sender.child.kill('SIGKILL')
  await receiver?.stop()
  await rm(dir, { recursive: true, force: true })
})

interface Status {
  enabled: boolean
  events: number
  withoutRecord: number
  deliveries: { delivered: number; scheduled: number; stopped: number }
}

/** The example's lease (the receiver's default `leaseMs`). */
const LEASE_MS = 30_000

/**
 * Asks the sender for its status until every delivery is delivered. A request the stopped receiver
 * had claimed holds its event (and, with ordering, its email) for the receiver's lease, 30 s, and
 * the recovered deliveries of it meet 409 until then. At this test's time scale (backoff × 0.01)
 * a delivery's 10 attempts take about 25 s, so on a loaded machine they can all fall inside the
 * lease and the delivery stops (CI's test:all, 2026-11-28: 60 s of polls saw it stay stopped).
 * Then, as docs/reliability.md tells an operator, `recover` runs again once the lease has passed
 * (`recoverAgain`, at most once); a real sender's backoff (5 s doubling) outlasts the lease.
 */
async function allDelivered(s: SenderProcess, stoppedAt: number, recoverAgain: () => Promise<void>): Promise<Status> {
  let recoveredAgain = false
  const until = performance.now() + LEASE_MS + 60_000
  for (let i = 0; i < 600 && performance.now() < until; i++) {
    const from = s.lines.length
    s.send('status')
    const status = (await s.waitFor((l) => l.kind === 'status', 'a status line', 10_000, from)) as SenderLine & Status
    if (status.deliveries.scheduled === 0 && status.deliveries.stopped === 0) return status
    if (status.deliveries.scheduled === 0 && !recoveredAgain) {
      // Nothing left to try: the stopped ones ran out of attempts while a lease held them.
      recoveredAgain = true
      const leaseEnds = stoppedAt + LEASE_MS + 1_000 - performance.now()
      if (leaseEnds > 0) await new Promise((done) => setTimeout(done, leaseEnds))
      await recoverAgain()
    }
    await new Promise((done) => setTimeout(done, 200))
  }
  throw new Error('deliveries still not delivered')
}

describe('the walkthrough of the command line guide', () => {
  it('shows every step it runs', () => {
    const section = GUIDE.slice(GUIDE.indexOf('## Rehearse a recovery'), GUIDE.indexOf('## Commands'))
    for (const text of [
      'EMAIL_WEBHOOK_SECRET=whsec_try_it EMAIL_WEBHOOKS_DB=./walkthrough.db PORT=3000 node examples/express/src/server.js',
      'EMAIL_WEBHOOK_SECRET=whsec_try_it npx --no-install email-webhooks sender --port 4000 --to http://localhost:3000/hooks --emails 60 --ids ids.txt',
      'export EMAIL_API_URL=http://127.0.0.1:4000/v1',
      'npx --no-install email-webhooks endpoint recover <endpoint id> --db ./walkthrough.db',
      'EMAIL_WEBHOOK_SECRET=whsec_try_it npx --no-install email-webhooks emails reconcile http://localhost:3000/hooks --ids ids.txt',
    ]) {
      expect(section).toContain(text)
    }
  })

  it('breaks the receiver, sees the endpoint disabled, recovers and reconciles: every email handled once', async () => {
    await receiver.start()
    const ids = join(dir, 'ids.txt')
    const env = { EMAIL_WEBHOOK_SECRET: SECRET }
    // As the guide's, on a free port, faster (4 emails a second, backoff waits × 0.01).
    const args = [
      '--port',
      '0',
      '--to',
      receiver.url,
      '--emails',
      String(EMAILS),
      '--rate',
      '4',
      '--ids',
      'ids.txt',
      '--time-scale',
      '0.01',
    ]
    const s = startSender(args, { cwd: dir, env })
    sender = s
    const ready = await s.waitFor((l) => l.kind === 'ready', 'the ready line')
    expect(ready).toMatchObject({
      apiUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1$/),
      apiKey: expect.stringMatching(/^ek_local_/),
    })
    expect(ready.secret).toBeUndefined()
    expect(ready.secretSource).toBe('EMAIL_WEBHOOK_SECRET')
    await s.waitFor((l) => l.kind === 'attempt' && l.ok === true, 'a delivered attempt')

    // Break the receiver: the sender's attempts fail until it disables the endpoint.
    await receiver.stop()
    const stoppedAt = performance.now()
    const disabled = await s.waitFor((l) => l.kind === 'endpoint' && l.enabled === false, 'the endpoint disabled')
    expect(disabled.failures).toBeGreaterThanOrEqual(10)
    await s.waitFor((l) => l.kind === 'emitted' && l.recorded === false, 'an event emitted while disabled')
    await s.waitFor((l) => l.kind === 'emitted_all', 'the end of emitting')

    // Fix it, recover the endpoint, wait for the retried deliveries, then reconcile.
    await receiver.start()
    const api = { EMAIL_API_URL: ready.apiUrl as string, EMAIL_API_KEY: ready.apiKey as string }
    const recover = () =>
      runCli(['endpoint', 'recover', ready.endpointId as string, '--db', join(dir, 'walkthrough.db'), '--json'], { env: api, cwd: dir })
    const recovered = await recover()
    expect(recovered.code, recovered.stderr).toBe(0)
    const recovery = JSON.parse(recovered.stdout) as { enable: string; failed: unknown[] }
    expect(recovery).toMatchObject({ enable: 'reenabled', failed: [] })
    await s.waitFor((l) => l.kind === 'endpoint' && l.enabled === true, 'the endpoint enabled again')
    const status = await allDelivered(s, stoppedAt, async () => {
      const again = await recover()
      expect(again.code, again.stderr).toBe(0)
      expect(JSON.parse(again.stdout)).toMatchObject({ failed: [] })
    })
    expect(status.withoutRecord).toBeGreaterThan(0)

    const reconcile = () =>
      runCli(['emails', 'reconcile', receiver.url, '--ids', 'ids.txt', '--json'], { env: { ...api, ...env }, cwd: dir })
    const first = await reconcile()
    expect(first.code, first.stderr).toBe(0)
    const totals = (JSON.parse(first.stdout) as { totals: { events: Record<string, number> } }).totals.events
    // Exactly the events that got no delivery record are handled by reconcile; the rest were delivered.
    expect(totals).toMatchObject({ handled: status.withoutRecord, duplicate: status.events - status.withoutRecord, refused: 0, failed: 0 })
    const second = await reconcile()
    expect((JSON.parse(second.stdout) as { totals: { events: Record<string, number> } }).totals.events).toMatchObject({
      handled: 0,
      duplicate: status.events,
    })

    // Every email's last event ran its handler once: one line per email, one complaint for the tenth.
    const emails = readFileSync(ids, 'utf8').trim().split('\n')
    expect(emails).toHaveLength(EMAILS)
    const log = receiver.output()
    for (const [i, email] of emails.entries()) {
      const handled = log
        .split('\n')
        .filter((line) => line.includes(email) && /accepted by the destination server|bounced: marked/.test(line))
      expect([email, handled.length]).toEqual([email, 1])
      expect(handled[0]).toContain((i + 1) % 4 === 0 ? 'bounced: marked' : 'accepted by the destination server')
    }
    expect(log.split('\n').filter((line) => line.includes(`suppressing future mail to the recipient of ${emails[9]}`))).toHaveLength(1)
    expect(await s.quit()).toBe(0)
  }, 240_000)
})
