// `email-webhooks send` against the real example servers (Express and Hono on Node), run as a
// process: every mode's outcome, the line, the exit code and the --json shape.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RequestJson } from '../src/lib/report.js'
import { type ExampleServer, HAS_SCRIPT, runCli, runCliInTty, SECRET, startExample } from './helpers/cli.js'

const env = { EMAIL_WEBHOOK_SECRET: SECRET }
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

async function sendJson(
  url: string,
  args: string[],
): Promise<{ code: number | null; doc: { ok: boolean; mode: string; requests: RequestJson[] } }> {
  const result = await runCli(['send', url, ...args, '--json'], { env })
  return { code: result.code, doc: JSON.parse(result.stdout) }
}

describe.each(['express', 'hono-node'] as const)('send against the %s example', (name) => {
  let server: ExampleServer
  beforeAll(async () => {
    server = await startExample(name)
  })
  afterAll(() => server?.stop())

  describe.concurrent('each mode', () => {
    it('answers 200 to one authentic email.bounced and prints one line with status, latency and verdict', async () => {
      const result = await runCli(['send', server.url], { env })
      expect(result.code).toBe(0)
      const lines = result.stdout.trim().split('\n')
      expect(lines).toHaveLength(2)
      expect(lines[1]).toMatch(new RegExp(`^✓ send\\s+200 {2}\\d+\\.\\d ms {2}email\\.bounced ${UUID} {2}right: `))
      // Not a TTY: no colour codes.
      expect(result.stdout).not.toContain('\u001b[')
    })

    it('--duplicate: the same webhook-id twice, both 2xx, the second reported as a duplicate', async () => {
      const { code, doc } = await sendJson(server.url, ['--duplicate', '--type', 'email.complained'])
      expect(code).toBe(0)
      expect(doc.mode).toBe('duplicate')
      const [first, second] = doc.requests
      expect(first?.webhookId).toBe(second?.webhookId)
      expect([first?.status, second?.status]).toEqual([200, 200])
      expect([first?.duplicate, second?.duplicate]).toEqual([false, true])
    })

    it.each([
      ['--old-timestamp', 'timestamp_too_old'],
      ['--future', 'timestamp_too_new'],
      ['--tampered', 'signature_mismatch'],
      ['--wrong-secret', 'signature_mismatch'],
    ])('%s is refused with 401 %s, which is right (exit 0)', async (flag, code) => {
      const result = await runCli(['send', server.url, flag], { env })
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(new RegExp(`✓ \\S+\\s+401 ${code} .*right: `))
    })

    it('--unknown-type is acknowledged with 2xx', async () => {
      const { code, doc } = await sendJson(server.url, ['--unknown-type'])
      expect(code).toBe(0)
      expect(doc.requests).toEqual([expect.objectContaining({ status: 200, type: 'organization.updated', ok: true, expected: '2xx' })])
    })

    it("--out-of-order sends one email's five lifecycle events in a scrambled order, each acknowledged", async () => {
      const { code, doc } = await sendJson(server.url, ['--out-of-order'])
      expect(code).toBe(0)
      const types = doc.requests.map((request) => request.type)
      expect([...types].sort()).toEqual(
        ['email.queued', 'email.recipient_accepted', 'email.recipient_deferred', 'email.recipient_resubmitted', 'email.submitted'].sort(),
      )
      expect(types).not.toEqual([
        'email.queued',
        'email.submitted',
        'email.recipient_deferred',
        'email.recipient_resubmitted',
        'email.recipient_accepted',
      ])
      expect(doc.requests.every((request) => request.status === 200 && request.ok)).toBe(true)
      expect(new Set(doc.requests.map((request) => request.webhookId)).size).toBe(5)
    })

    it('--json gives one document with every field of each request', async () => {
      const { code, doc } = await sendJson(server.url, ['--type', 'email.queued'])
      expect(code).toBe(0)
      expect(doc).toEqual({
        ok: true,
        mode: 'send',
        url: server.url,
        requests: [
          {
            label: 'send',
            webhookId: expect.stringMatching(new RegExp(`^${UUID}$`)),
            type: 'email.queued',
            status: 200,
            code: null,
            message: null,
            retryAfter: null,
            duplicate: false,
            queued: false,
            skipped: null,
            latencyMs: expect.any(Number),
            failure: null,
            expected: '2xx',
            ok: true,
          },
        ],
      })
    })

    it('exits 1 and says WRONG when the answer is not the expected one (--expect)', async () => {
      const result = await runCli(['send', server.url, '--tampered', '--expect', '2xx'], { env })
      expect(result.code).toBe(1)
      expect(result.stdout).toMatch(/✗ tampered\s+401 signature_mismatch .*WRONG, expected 2xx/)
      const exact = await runCli(['send', server.url, '--old-timestamp', '--expect', '4xx'], { env })
      expect(exact.code).toBe(0)
    })

    it('--stale, the older name of --old-timestamp, still works, says so on stderr, and is not in --help', async () => {
      const result = await runCli(['send', server.url, '--stale', '--json'], { env })
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout)).toMatchObject({
        mode: 'oldTimestamp',
        requests: [{ label: 'old-timestamp', status: 401, ok: true }],
      })
      expect(result.stderr.trim()).toBe(
        'email-webhooks: --stale is now --old-timestamp (a timestamp outside the ±300 s window; "stale" is what ordering calls an older event of an email). --stale will be removed in the next release.',
      )
      const help = await runCli(['send', '--help'])
      expect(help.stdout).toMatch(/--old-timestamp\s+sign with a timestamp 600 s old/)
      expect(help.stdout).toMatch(/--email <id>\s+data\.id of generated events/)
      expect(help.stdout).toMatch(/--created-at <time>/)
      expect(help.stdout).toMatch(/--no-color/)
      expect(help.stdout).not.toMatch(/--stale|--email-id/)
    })
  })
})

describe('send: secret sources, custom bodies and failures (Express example)', () => {
  let server: ExampleServer
  let dir: string
  beforeAll(async () => {
    server = await startExample('express')
    dir = await mkdtemp(join(tmpdir(), 'cli-send-'))
  })
  afterAll(async () => {
    await server?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  describe.concurrent('cases', () => {
    it('reads EMAIL_WEBHOOK_SECRET from ./.env when neither --secret nor the variable is set', async () => {
      const cwd = await mkdtemp(join(dir, 'env-'))
      await writeFile(join(cwd, '.env'), `# test\nOTHER=1\nEMAIL_WEBHOOK_SECRET="${SECRET}"\n`)
      const result = await runCli(['send', server.url], { cwd })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain('secret from EMAIL_WEBHOOK_SECRET in')
    })

    it('takes --secret over the environment, and a wrong one makes the receiver answer 401 (exit 1)', async () => {
      const good = await runCli(['send', server.url, '--secret', SECRET], { env: { EMAIL_WEBHOOK_SECRET: 'not-the-secret' } })
      expect(good.code).toBe(0)
      const bad = await runCli(['send', server.url], { env: { EMAIL_WEBHOOK_SECRET: 'not-the-secret' } })
      expect(bad.code).toBe(1)
      expect(bad.stdout).toMatch(/✗ send\s+401 signature_mismatch/)
    })

    it('exits 2 with a message naming the three sources when there is no secret', async () => {
      const result = await runCli(['send', server.url], { cwd: await mkdtemp(join(dir, 'none-')) })
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(/--secret.*EMAIL_WEBHOOK_SECRET.*\.env/)
    })

    it('refuses a secret with surrounding white space without printing it', async () => {
      const result = await runCli(['send', server.url], { env: { EMAIL_WEBHOOK_SECRET: `${SECRET}\n` } })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain('white space')
    })

    it('sends a custom JSON file as it is, its id becoming the webhook-id', async () => {
      const id = crypto.randomUUID()
      const file = join(dir, 'custom.json')
      await writeFile(
        file,
        `{ "id": "${id}", "type": "email.bounced", "created_at": "2026-01-01T00:00:00Z", "data": { "id": "e-1", "note": "héllo 📨" } }\n`,
      )
      const { code, doc } = await sendJson(server.url, ['--file', file])
      expect(code).toBe(0)
      expect(doc.requests[0]).toMatchObject({ webhookId: id, type: 'email.bounced', status: 200 })
    })

    it('reads the custom body from stdin with --file -', async () => {
      const id = crypto.randomUUID()
      const body = JSON.stringify({ id, type: 'email.rejected', created_at: new Date().toISOString(), data: { id: 'e-2' } })
      const result = await runCli(['send', server.url, '--file', '-', '--json'], { env, input: body })
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout).requests[0]).toMatchObject({ webhookId: id, type: 'email.rejected', status: 200 })
    })

    it('shows a custom body that is not an envelope as acknowledged but ignored: 200 invalid_envelope, exit 0', async () => {
      const result = await runCli(['send', server.url, '--file', '-'], { env, input: '[1,2,3]' })
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/✓ send\s+200 invalid_envelope/)
    })

    it.skipIf(!HAS_SCRIPT)('colours and a progress bar on a terminal; neither colour with NO_COLOR', async () => {
      const coloured = await runCliInTty(['send', server.url], env)
      expect(coloured.code).toBe(0)
      expect(coloured.output).toContain('\u001b[32m✓')
      const plain = await runCliInTty(['send', server.url], { ...env, NO_COLOR: '1' })
      expect(plain.code).toBe(0)
      expect(plain.output).toMatch(/✓ send\s+200/)
      expect(plain.output).not.toContain('\u001b[')
      const load = await runCliInTty(['send', server.url, '-n', '30', '-c', '2'], { ...env, NO_COLOR: '1' })
      expect(load.code).toBe(0)
      expect(load.output).toMatch(/\d+% \| \d+\/30 \| \d+ req\/s/)
    })

    it('exits 3 when nothing answers', async () => {
      // Port 2 is never handed out as an ephemeral port (and, unlike port 1, fetch does not refuse it):
      // no parallel test's server can take it between a free-port probe and the send, a race that
      // once made this delivery answered.
      const result = await runCli(['send', 'http://127.0.0.1:2/hooks', '--json'], { env })
      expect(result.code).toBe(3)
      expect(JSON.parse(result.stdout).requests[0]).toMatchObject({ status: null, failure: 'ECONNREFUSED', ok: false })
    })

    it.each([
      [['--old-timestamp', '--tampered'], "option '--old-timestamp' cannot be used with option '--tampered': choose one mode at a time."],
      [['--stale', '--future'], "option '--stale' cannot be used with option '--future': choose one mode at a time."],
      [
        ['--expect', '2x'],
        "option '--expect <class>' argument '2x' is invalid. Give a status class (2xx, 4xx, 5xx) or a status (401, 409).",
      ],
      [['--timeout', '0'], "option '--timeout <ms>' argument '0' is invalid. Give a whole number from 1 to 600000."],
      [['--count', '2', '--duplicates', '101'], "argument '101' is invalid. Give a whole number from 0 to 100."],
      [['--type', 'email.opened'], 'Allowed choices are email.queued'],
      [['--concurrency', '4'], '--concurrency, --duplicates and --duration apply to a load: give --count too.'],
      [
        ['--unknown-type', '--type', 'email.queued'],
        '--unknown-type and --out-of-order choose the event types themselves: leave out --type.',
      ],
      [
        ['--file', '-', '--email-id', 'e-1'],
        "option '-f, --file <path>' cannot be used with option '--email-id <id>': --file sends that body as it is",
      ],
      [['--file', '-', '--email', 'e-1'], "cannot be used with option '--email <id>': --file sends that body as it is"],
      [['--file', '-', '--created-at', '-5m'], "cannot be used with option '--created-at <time>': --file sends that body as it is"],
      [['--file', '-', '--count', '3'], '--file sends that body as it is'],
      [
        ['--count', '3', '--tampered'],
        "option '-n, --count <n>' cannot be used with option '--tampered': --count sends distinct generated events",
      ],
      [['--email', 'a', '--email-id', 'b'], '--email-id is the older name of --email: give one of them.'],
      [
        ['--created-at', 'yesterday'],
        'Give a date-time with an offset (2026-11-20T08:00:00Z), a date (2026-11-20, midnight UTC) or a time relative to now',
      ],
      [['--created-at', '5m'], "argument '5m' is invalid"],
      [['--created-at', '+99999d'], 'more than 10 years from now'],
      [['--created-at', '-3653d'], 'every later event of that email stale'],
    ] as const)('exits 2 on a usage error and sends nothing, saying what was wrong and what to do: %j', async (args, says) => {
      const result = await runCli(['send', server.url, ...args], { env })
      expect(result.code).toBe(2)
      expect(result.stdout).toBe('')
      expect(result.stderr).toContain(says)
    })

    it('exits 2 on a relative URL, saying what to give', async () => {
      const relative = await runCli(['send', '/hooks'], { env })
      expect([relative.code, relative.stderr]).toEqual([2, 'email-webhooks: The URL must be absolute, e.g. http://127.0.0.1:3000/hooks.\n'])
    })
  })
})

describe('send: lines of one run line up, and a refused signature says where the secret came from', () => {
  let server: Server
  let url: string
  /** What the listener answers, in turn: a real HTTP listener on 127.0.0.1 that answers as scripted. */
  const script: Array<{ status: number; body: string }> = []

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume()
      req.once('end', () => {
        const next = script.shift() ?? { status: 500, body: '{"error":{"code":"script_exhausted"}}' }
        res.writeHead(next.status, { 'content-type': 'application/json' })
        res.end(next.body)
      })
    })
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
    const address = server.address()
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks`
  })
  afterAll(() => new Promise((done) => server.close(done)))

  it('pads the label, the status/code, the notes and the latency so that the columns line up across the lines', async () => {
    script.push({ status: 200, body: '{"ok":true}' }, { status: 401, body: '{"error":{"code":"timestamp_too_old","message":"…"}}' })
    const result = await runCli(['send', url, '--duplicate'], { env })
    expect(result.code).toBe(1)
    const [, first, second] = result.stdout.trimEnd().split('\n')
    expect(first).toMatch(/^✓ first +200 +\d+\.\d ms {2}email\.bounced /)
    expect(second).toMatch(/^✗ duplicate +401 timestamp_too_old +\d+\.\d ms {2}email\.bounced /)
    // The status, the latency's unit and the event type start at the same column on both lines.
    for (const column of [/\d{3}/, / ms /, /email\.bounced/]) {
      expect([column.source, first?.search(column)]).toEqual([column.source, second?.search(column)])
    }
  })

  it('a duplicate note also keeps the columns in line', async () => {
    script.push({ status: 200, body: '{"ok":true}' }, { status: 200, body: '{"ok":true,"duplicate":true}' })
    const result = await runCli(['send', url, '--duplicate'], { env })
    expect(result.code).toBe(0)
    const [, first, second] = result.stdout.trimEnd().split('\n')
    expect(second).toMatch(/^✓ duplicate +200 {2}duplicate {2} *\d+\.\d ms/)
    for (const column of [/ ms /, /email\.bounced/, / right: /]) {
      expect([column.source, first?.search(column)]).toEqual([column.source, second?.search(column)])
    }
  })

  it('after a 401 signature_mismatch to an authentic delivery, hints at the secret and names its source, never the secret', async () => {
    const wrong = 'whsec_not_the_receivers_secret'
    script.push({ status: 401, body: '{"error":{"code":"signature_mismatch"}}' })
    const fromEnv = await runCli(['send', url], { env: { EMAIL_WEBHOOK_SECRET: wrong } })
    expect(fromEnv.code).toBe(1)
    expect(fromEnv.stdout).toMatch(/✗ send +401 signature_mismatch .*WRONG, expected 2xx/)
    expect(fromEnv.stderr).toContain("is the secret here (from EMAIL_WEBHOOK_SECRET) the receiver's?")
    script.push({ status: 401, body: '{"error":{"code":"signature_mismatch"}}' })
    const fromOption = await runCli(['send', url, '--secret', wrong, '--json'], {})
    expect(fromOption.stderr).toContain('(from --secret)')
    expect(JSON.parse(fromOption.stdout).requests[0]).toMatchObject({ status: 401, code: 'signature_mismatch', ok: false })
    for (const run of [fromEnv, fromOption]) expect(run.stdout + run.stderr).not.toContain(wrong)
    // --wrong-secret expects that 401: no hint.
    script.push({ status: 401, body: '{"error":{"code":"signature_mismatch"}}' })
    const expected = await runCli(['send', url, '--wrong-secret'], { env })
    expect([expected.code, expected.stderr]).toEqual([0, ''])
  })
})
