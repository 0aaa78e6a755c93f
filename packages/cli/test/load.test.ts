// `email-webhooks send --count`: a bounded load against the Hono example, its summary (table and
// --json), the --duration cap, and a clean stop with the summary so far on SIGINT.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ExampleServer, runCli, SECRET, startExample } from './helpers/cli.js'

const env = { EMAIL_WEBHOOK_SECRET: SECRET }

describe('send --count against the hono-node example', () => {
  let server: ExampleServer
  beforeAll(async () => {
    server = await startExample('hono-node')
  })
  afterAll(() => server?.stop())

  describe.concurrent('loads', () => {
    it('sends N deliveries with repeats and sums them up in --json', async () => {
      const result = await runCli(['send', server.url, '--count', '60', '--concurrency', '4', '--duplicates', '30', '--json'], { env })
      // On failure, show what the CLI and the example printed (answers by status, the server's log lines).
      expect(result.code, `${result.stdout}\n${result.stderr}\n${server.output().slice(-2000)}`).toBe(0)
      const summary = JSON.parse(result.stdout)
      expect(summary).toMatchObject({ ok: true, sent: 60, '5xx': 0, noAnswer: 0, unexpected: 0, stoppedBy: 'count', expected: '2xx' })
      // Every answer is a 2xx, or a 409 for a repeat whose first copy was still in flight.
      expect(summary['2xx'] + summary['409']).toBe(60)
      expect(summary['4xx']).toBe(summary['409'])
      expect(summary.duplicatesSent).toBeGreaterThan(0)
      expect(summary.duplicatesSent).toBeLessThan(60)
      expect(summary.p50Ms).toBeGreaterThan(0)
      expect(summary.p99Ms).toBeGreaterThanOrEqual(summary.p50Ms)
      expect(summary.reqPerSec).toBeGreaterThan(0)
    })

    it('prints a summary table with sent, 2xx, 4xx, 5xx, 409, p50, p99 and req/s, and no progress bar off a TTY', async () => {
      const result = await runCli(['send', server.url, '-n', '20', '-c', '5'], { env })
      expect(result.code).toBe(0)
      const [head, values, verdict] = result.stdout.trim().split('\n')
      expect(head?.trim().split(/\s{2,}/)).toEqual(['sent', '2xx', '4xx', '5xx', '409', 'no answer', 'p50 ms', 'p99 ms', 'req/s'])
      expect(values?.trim().split(/\s+/).slice(0, 6)).toEqual(['20', '20', '0', '0', '0', '0'])
      expect(verdict).toMatch(/^all requests sent in .* every answer was 2xx/)
      expect(result.stderr).toBe('')
    })

    it('exits 1 when the load is refused (wrong secret): every answer a 401', async () => {
      const result = await runCli(['send', server.url, '-n', '10', '--json'], { env: { EMAIL_WEBHOOK_SECRET: 'another-secret' } })
      expect(result.code).toBe(1)
      expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, sent: 10, '4xx': 10, unexpected: 10 })
    })

    it('stops at the --duration cap', async () => {
      const result = await runCli(['send', server.url, '-n', '1000000', '-c', '2', '--duration', '1', '--json'], { env })
      expect(result.code).toBe(0)
      const summary = JSON.parse(result.stdout)
      expect(summary).toMatchObject({ ok: true, stoppedBy: 'duration', unexpected: 0 })
      expect(summary.sent).toBeGreaterThan(0)
      expect(summary.sent).toBeLessThan(1_000_000)
    })

    it('stops cleanly on SIGINT and prints the summary so far (exit 130)', async () => {
      const emailId = crypto.randomUUID()
      const result = await runCli(
        ['send', server.url, '-n', '1000000', '-c', '2', '--duration', '60', '--type', 'email.bounced', '--email-id', emailId],
        {
          env,
          onSpawn: (child) => {
            // Interrupt once the receiver has handled one of these deliveries (the example logs each bounce).
            const started = Date.now()
            const poll = setInterval(() => {
              if (server.output().includes(`email ${emailId} bounced`) || Date.now() - started > 20_000) {
                clearInterval(poll)
                child.kill('SIGINT')
              }
            }, 20)
          },
        },
      )
      expect(result.signal).toBeNull()
      expect(result.code).toBe(130)
      const [, values, verdict] = result.stdout.trim().split('\n')
      const [sent, ok] = (values ?? '').trim().split(/\s+/).map(Number)
      expect(sent).toBeGreaterThan(0)
      expect(ok).toBe(sent)
      expect(verdict).toMatch(/^interrupted \(Ctrl-C\): summary so far/)
    })

    it('refuses a count or concurrency out of bounds, and mode options with --count', async () => {
      for (const args of [
        ['-n', '0'],
        ['-n', '1000001'],
        ['-n', '5', '-c', '257'],
        ['-n', '5', '--duration', '3601'],
        ['-n', '5', '--duplicates', '101'],
        ['-n', '5', '--tampered'],
      ]) {
        const result = await runCli(['send', server.url, ...args], { env })
        expect(result.code, args.join(' ')).toBe(2)
      }
    })
  })
})
