/**
 * `email-webhooks console` as a process: it listens on 127.0.0.1 only, its link's token works once
 * (a session cookie, then a redirect without the token), a request naming another Host is refused
 * (DNS rebinding), it is read-only unless --actions, a missing store file is a usage error, and
 * Ctrl-C (SIGINT) ends it cleanly.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BIN, runCli } from './helpers/cli.js'

let dir: string
let db: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-console-'))
  db = join(dir, 'dedup.db')
  const store = new SqliteDedupStore({ path: db })
  const inbox = store.inbox
  if (!inbox) throw new Error('no inbox')
  await inbox.enqueue({ key: 'default:dead-1', type: 'email.bounced', payload: '{}', timestamp: 1 }, { retentionMs: 60_000 })
  const lease = await inbox.take({ leaseMs: 60_000, ordered: false })
  if (!lease) throw new Error('no lease')
  await inbox.fail(lease, { error: 'boom', retryInMs: null })
  await store.close()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

/** Starts the command; resolves with the link it printed. */
function start(args: string[]): Promise<{ child: ChildProcess; link: URL; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'console', '--store', db, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString()
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const line = /^(http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43})$/m.exec(out)?.[1]
      if (line) resolve({ child, link: new URL(line), stderr: () => err })
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${err}`)))
  })
}

/** A request with any Host header (fetch does not let one set it). */
function ask(url: URL, options: { host?: string; cookie?: string; method?: string; body?: string; headers?: Record<string, string> } = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        headers: { host: options.host ?? url.host, ...(options.cookie ? { cookie: options.cookie } : {}), ...options.headers },
      },
      (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString()
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.once('error', reject)
    req.end(options.body)
  })
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code))
    child.kill('SIGINT')
  })
}

describe('email-webhooks console', () => {
  it('signs in once with the link, refuses other hosts, stays read-only, and stops on Ctrl-C', async () => {
    const { child, link, stderr } = await start([])
    try {
      const origin = new URL(link.origin)
      expect((await ask(origin)).status).toBe(401)
      const rebound = await ask(link, { host: `attacker.example:${link.port}` })
      expect(rebound.status).toBe(421)
      expect(rebound.body).not.toContain('token')
      const first = await ask(link)
      expect(first.status).toBe(303)
      expect(first.headers.location).toBe('/')
      const cookie = String(first.headers['set-cookie']).split(';')[0] as string
      expect(String(first.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict/)
      expect((await ask(link)).status).toBe(401)
      const dead = await ask(new URL('/dead', origin), { cookie })
      expect(dead.status).toBe(200)
      expect(dead.body).toContain('dead-1')
      expect(dead.body).not.toContain('Retry selected')
      expect((await ask(new URL('/dead', origin), { cookie, host: `localhost:${link.port}` })).status).toBe(200)
      const token = /name="csrf" value="([^"]+)"/.exec((await ask(new URL('/events/dead-1', origin), { cookie })).body)?.[1] ?? ''
      const post = await ask(new URL('/dead/retry', origin), {
        method: 'POST',
        cookie: `${cookie}; ewc_csrf=${token}`,
        body: new URLSearchParams({ csrf: token, one: 'default:dead-1' }).toString(),
        headers: { origin: origin.origin, 'content-type': 'application/x-www-form-urlencoded' },
      })
      expect(post.status).toBe(403)
      expect(post.body).toContain('read-only')
      expect(stderr()).toMatch(/^Console of SQLite file .*dedup\.db \(from --store\), read-only\./)
    } finally {
      expect(await stop(child)).toBe(0)
    }
  })

  it('retries a dead letter from its page with --actions', async () => {
    const { child, link } = await start(['--actions'])
    try {
      const origin = new URL(link.origin)
      const cookie = String((await ask(link)).headers['set-cookie']).split(';')[0] as string
      const page = await ask(new URL('/dead', origin), { cookie })
      const token = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? ''
      const csrf = String(page.headers['set-cookie']).split(';')[0] as string
      const post = await ask(new URL('/dead/retry', origin), {
        method: 'POST',
        cookie: `${cookie}; ${csrf}`,
        body: new URLSearchParams({ csrf: token, one: 'default:dead-1' }).toString(),
        headers: { origin: origin.origin, 'content-type': 'application/x-www-form-urlencoded' },
      })
      expect([post.status, post.headers.location]).toEqual([303, '/dead?retried=1'])
    } finally {
      await stop(child)
    }
    const store = new SqliteDedupStore({ path: db, readOnly: false })
    expect((await store.inbox?.get('default:dead-1'))?.state).toBe('pending')
    await store.close()
  })

  it('refuses a store file that does not exist (exit 2), creating none', async () => {
    const result = await runCli(['console', '--store', join(dir, 'missing.db')])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('No SQLite file at')
    expect(result.stdout).toBe('')
  })
})
