// `email-webhooks replay`: recorded deliveries re-sent to the Express example, re-signed with fresh
// timestamps and their ids kept (a second replay is answered as duplicates).
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ExampleServer, runCli, SECRET, startExample } from './helpers/cli.js'

const env = { EMAIL_WEBHOOK_SECRET: SECRET }

function envelope(type: string): { id: string; type: string; created_at: string; data: { id: string } } {
  return { id: crypto.randomUUID(), type, created_at: '2026-01-01T00:00:00.000Z', data: { id: crypto.randomUUID() } }
}

describe('replay against the express example', () => {
  let server: ExampleServer
  let dir: string
  beforeAll(async () => {
    server = await startExample('express')
    dir = await mkdtemp(join(tmpdir(), 'cli-replay-'))
  })
  afterAll(async () => {
    await server?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('re-sends each line form with a fresh signature; a second replay keeps the ids (duplicates)', async () => {
    const [a, b, c] = [envelope('email.bounced'), envelope('email.complained'), envelope('email.queued')]
    const file = join(dir, 'captured.jsonl')
    const lines = [
      // Raw body as captured, with the old (expired) headers: the recorded webhook-id is kept.
      JSON.stringify({
        body: JSON.stringify(a),
        headers: { 'Webhook-Id': a.id, 'webhook-timestamp': '1767225600', 'webhook-signature': '0'.repeat(64) },
      }),
      JSON.stringify({ body: b }),
      '',
      JSON.stringify(c),
    ]
    await writeFile(file, `${lines.join('\n')}\n`)
    const first = await runCli(['replay', file, server.url, '--json'], { env })
    expect(first.code).toBe(0)
    const doc = JSON.parse(first.stdout)
    expect(
      doc.requests.map((r: { label: string; webhookId: string; status: number; duplicate: boolean }) => [
        r.label,
        r.webhookId,
        r.status,
        r.duplicate,
      ]),
    ).toEqual([
      ['line 1', a.id, 200, false],
      ['line 2', b.id, 200, false],
      ['line 4', c.id, 200, false],
    ])
    const again = await runCli(['replay', file, server.url], { env })
    expect(again.code).toBe(0)
    expect(again.stdout.match(/✓ line \d\s+200 {2}duplicate/g)).toHaveLength(3)
  })

  it('checks the whole file first: a bad line sends nothing and exits 2 naming the line', async () => {
    const good = envelope('email.bounced')
    const file = join(dir, 'bad.jsonl')
    await writeFile(file, `${JSON.stringify(good)}\n{"headers":{}}\n`)
    const result = await runCli(['replay', file, server.url], { env })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('line 2:')
    expect(result.stdout).toBe('')
    // The good line was not sent: replaying it alone is not a duplicate.
    const alone = await runCli(['replay', '-', server.url, '--json'], { env, input: JSON.stringify(good) })
    expect(JSON.parse(alone.stdout).requests[0]).toMatchObject({ webhookId: good.id, status: 200, duplicate: false })
  })
})
