/**
 * `email-webhooks endpoint …` against the faithful sender listening on 127.0.0.1: list,
 * create (secret once, the public-HTTPS warning), enable, disable, deliveries, recover with
 * --dry-run and --db; a bad key or scope and an unknown endpoint give one clear line; the
 * API key is never printed.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stripVTControlCharacters } from 'node:util'
import { emailWebhook } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createFaithfulSender, type FaithfulSender, listenSender, type SenderListener } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HAS_SCRIPT, runCli, runCliInTty } from './helpers/cli.js'

const KEY = `ek_cli_${crypto.randomUUID().replaceAll('-', '')}`
const READ_KEY = `ek_cli_read_${crypto.randomUUID().replaceAll('-', '')}`
let sender: FaithfulSender
let api: SenderListener
let dir: string
let broken = true
let handler: ((request: Request) => Promise<Response>) | undefined
let secret = ''
let store: SqliteDedupStore

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-endpoint-'))
  store = new SqliteDedupStore({ path: join(dir, 'dedup.db') })
  // Deliveries go in-process to core's receiver on a SQLite file; the API is served over HTTP.
  sender = createFaithfulSender({
    apiKeys: { [KEY]: ['webhooks:manage'], [READ_KEY]: ['emails:read'] },
    timeScale: 0.0005,
    // Three events spend their three attempts each and the 9th failure disables the endpoint, so
    // each waits for recover (a delivery with attempts left would be paused and resumed by the sender).
    maxAttempts: 3,
    disableAfter: 9,
    fetch: async (input, init) => {
      handler ??= emailWebhook(
        secret,
        {
          'email.bounced': () => {
            if (broken) throw new Error('down (simulated)')
          },
        },
        { store },
      )
      return handler(new Request(input, init))
    },
  })
  api = await listenSender(sender)
})
afterAll(async () => {
  sender.close()
  await api.close()
  await store.close()
  await rm(dir, { recursive: true, force: true })
})

async function cli(args: string[], key = KEY) {
  const result = await runCli(['endpoint', ...args], { env: { EMAIL_API_KEY: key, EMAIL_API_URL: api.baseUrl } })
  expect(result.stdout + result.stderr).not.toContain(key)
  return result
}

describe('email-webhooks endpoint', () => {
  it('creates an endpoint: the secret once, how to store it, and the public-HTTPS warning', async () => {
    const result = await cli(['create', 'http://127.0.0.1:9/hooks'])
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/public HTTPS URLs on port 443/)
    const id = result.stdout.match(/Endpoint created: (\S+)/)?.[1] as string
    const shown = result.stdout.match(/Secret \(shown only this once\): (whsec_\w+)/)?.[1] as string
    expect(result.stdout).toMatch(/Store it now/)
    expect(sender.endpoint(id)).toBeDefined()
    secret = shown
    const listed = await cli(['list', '--json'])
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id, enabled: true, failures: 0 })])
    expect(listed.stdout).not.toContain(shown)
  })

  it("warns with the sender's own URL rule, e.g. a 172.16/12 address, which the service then refuses", async () => {
    const result = await cli(['create', 'https://172.16.5.4/hooks'])
    expect(result.stderr).toMatch(/public HTTPS URLs on port 443.*url must point at a public address/)
    expect(result.stdout).not.toMatch(/Endpoint created/)
    expect(result.code).toBe(1)
  })

  it('lists, disables and enables, as a table and as JSON', async () => {
    const [endpoint] = JSON.parse((await cli(['list', '--json'])).stdout) as Array<{ id: string }>
    const id = endpoint?.id as string
    expect((await cli(['disable', id])).stdout).toContain(`Endpoint ${id} disabled`)
    expect(sender.endpoint(id)?.enabled).toBe(false)
    const table = (await cli(['list'])).stdout.split('\n')
    expect(table[0]).toMatch(/^id\s+url\s+enabled\s+failures\s+created$/)
    expect(table[1]).toMatch(new RegExp(`^${id}\\s+http://127.0.0.1:9/hooks\\s+no\\s+0\\s`))
    expect(JSON.parse((await cli(['enable', id, '--json'])).stdout)).toEqual({ id, enabled: true, requestId: expect.any(String) })
    expect(sender.endpoint(id)?.enabled).toBe(true)
  })

  it('recovers a disabled endpoint with --db: a dry run that changes nothing, then every event back once; a second run finds them all handled', async () => {
    const id = (JSON.parse((await cli(['list', '--json'])).stdout) as Array<{ id: string }>)[0]?.id as string
    broken = true
    const events = [0, 1, 2].map(() => sender.emit({ type: 'email.bounced' }).event.id)
    await sender.idle()
    expect(sender.endpoint(id)?.enabled).toBe(false)
    const deliveries = JSON.parse((await cli(['deliveries', id, '--json'])).stdout) as Array<{ event_id: string; last_status: number }>
    expect(deliveries.map((d) => d.event_id).sort()).toEqual([...events].sort())
    expect(deliveries.every((d) => d.last_status === 500)).toBe(true)
    broken = false

    const dry = await cli(['recover', id, '--dry-run', '--db', join(dir, 'dedup.db')])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toMatch(/^Dry run: would re-enable the endpoint; 3 would retry, 0 already handled, 0 expired, 0 failed/)
    expect(sender.endpoint(id)?.enabled).toBe(false)

    const run = await cli(['recover', id, '--json', '--spacing-ms', '0', '--db', join(dir, 'dedup.db')])
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as { enable: string; retried: Array<{ eventId: string; requestId: string }> }
    expect(report.enable).toBe('reenabled')
    expect(report.retried.map((r) => r.eventId).sort()).toEqual([...events].sort())
    await sender.idle()
    expect(sender.deliveries(id).map((d) => d.last_status)).toEqual([200, 200, 200])
    const again = await cli(['recover', id])
    expect(again.stdout).toMatch(/endpoint was enabled; 0 retried, 3 already handled/)
    // Five CLI runs: a minute leaves room on a loaded machine (it passed the 30 s default by a few ms at a load average of 16).
  }, 60_000)

  it('says so in one line when the key is invalid, lacks the scope, or the endpoint is unknown', async () => {
    const invalid = await cli(['list'], 'ek_cli_revoked_key_0000')
    expect([invalid.code, invalid.stdout]).toEqual([1, ''])
    expect(invalid.stderr.trim().split('\n')).toHaveLength(1)
    expect(invalid.stderr).toMatch(/API key was refused \(401 invalid_api_key\).*key from EMAIL_API_KEY/)
    const scope = await cli(['list'], READ_KEY)
    expect(scope.stderr.trim().split('\n')).toHaveLength(1)
    expect(scope.stderr).toMatch(/lacks the scope webhooks:manage/)
    const missing = crypto.randomUUID()
    const unknown = await cli(['recover', missing])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain(`no webhook endpoint with id ${missing}`)
  })

  it('refuses to run without a key or base URL, and never prints a key given with --api-key', async () => {
    const noKey = await runCli(['endpoint', 'list'], { env: { EMAIL_API_URL: api.baseUrl } })
    expect([noKey.code, noKey.stderr.trim()]).toEqual([
      2,
      'email-webhooks: No API key: set EMAIL_API_KEY (or pass --api-key) to a server-side key with the scope webhooks:manage.',
    ])
    const noUrl = await runCli(['endpoint', 'list'], { env: { EMAIL_API_KEY: KEY } })
    expect(noUrl.code).toBe(2)
    expect(noUrl.stderr).toContain('EMAIL_API_URL')
    // --api-url, as every API command names it; --base-url, its older name, still works.
    for (const urlOption of ['--api-url', '--base-url']) {
      const flagged = await runCli(['endpoint', 'list', '--api-key', 'ek_cli_flag_key_1234', urlOption, api.baseUrl])
      expect(flagged.stderr).toMatch(/key from --api-key/)
      expect(flagged.stdout + flagged.stderr).not.toContain('ek_cli_flag_key_1234')
    }
  })

  it('with --json, an API error is one JSON object on stderr (EmailApiError.toJSON(), and where the key came from when it was refused)', async () => {
    const invalid = await cli(['list', '--json'], 'ek_cli_revoked_key_0000')
    expect([invalid.code, invalid.stdout]).toEqual([1, ''])
    expect(invalid.stderr.trim().split('\n')).toHaveLength(1)
    expect(JSON.parse(invalid.stderr)).toEqual({
      error: {
        name: 'EmailApiError',
        status: 401,
        code: 'invalid_api_key',
        message: expect.stringContaining('API key was refused'),
        requestId: expect.any(String),
        keySource: 'EMAIL_API_KEY',
      },
    })
    const missing = crypto.randomUUID()
    const unknown = await cli(['enable', missing, '--json'])
    expect([unknown.code, unknown.stdout]).toEqual([1, ''])
    const { error } = JSON.parse(unknown.stderr)
    expect(error).toMatchObject({ status: 404, code: 'not_found', message: expect.stringContaining(missing) })
    expect(error).not.toHaveProperty('keySource')
  })

  it('lines up a table with coloured cells (FORCE_COLOR when not a terminal), and --no-color turns colours off', async () => {
    // One endpoint enabled ("yes", plain) and one disabled ("no", red).
    const [enabled, toDisable] = await Promise.all([
      cli(['create', 'https://example.com/aligned-enabled']),
      cli(['create', 'https://example.com/aligned-disabled', '--json']),
    ])
    expect(enabled?.code).toBe(0)
    expect((await cli(['disable', (JSON.parse(toDisable?.stdout ?? '') as { id: string }).id])).code).toBe(0)
    const env = { EMAIL_API_KEY: KEY, EMAIL_API_URL: api.baseUrl }
    const [coloured, noColorAfter, noColorBefore, forcedOff] = await Promise.all([
      runCli(['endpoint', 'list'], { env: { ...env, FORCE_COLOR: '1' } }),
      runCli(['endpoint', 'list', '--no-color'], { env: { ...env, FORCE_COLOR: '1' } }),
      runCli(['--no-color', 'endpoint', 'list'], { env: { ...env, FORCE_COLOR: '1' } }),
      runCli(['endpoint', 'list'], { env: { ...env, FORCE_COLOR: '0' } }),
    ])
    expect(coloured?.code).toBe(0)
    // The disabled endpoint's "no" is red: its escape codes take no room on the screen.
    expect(coloured?.stdout).toContain('\u001b[31mno\u001b[39m')
    const lines = stripVTControlCharacters(coloured?.stdout ?? '')
      .trimEnd()
      .split('\n')
    expect(lines.length).toBeGreaterThanOrEqual(3)
    const header = lines[0] as string
    for (const column of ['url', 'enabled', 'failures', 'created']) {
      const at = header.indexOf(column)
      for (const row of lines.slice(1)) {
        // Each cell starts where its column's title does: after two spaces (or more), never inside a cell.
        expect(row.slice(at - 2, at), `${column} in ${row}`).toBe('  ')
        expect(row[at], `${column} in ${row}`).not.toBe(' ')
      }
    }
    for (const plain of [noColorAfter, noColorBefore, forcedOff]) {
      expect(plain?.code).toBe(0)
      expect(plain?.stdout).toMatch(/^id\s+url/)
      expect(plain?.stdout).not.toContain('\u001b[')
    }
    // Three rounds of CLI runs: room for a loaded machine.
  }, 90_000)

  it.runIf(HAS_SCRIPT)('prints a table on a terminal', async () => {
    const { code, output } = await runCliInTty(['endpoint', 'list'], { EMAIL_API_KEY: KEY, EMAIL_API_URL: api.baseUrl })
    expect(code).toBe(0)
    expect(output).toMatch(/id\s+url\s+enabled\s+failures\s+created/)
    expect(output).not.toContain(KEY)
  })
})
