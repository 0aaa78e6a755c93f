import { type ChildProcess, spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres, type TestServer } from '../../../test/services/servers.js'

const SERVER = join(dirname(fileURLToPath(import.meta.url)), '../src/server.js')
let postgres: TestServer
const instances: { child: ChildProcess; url: string; output: () => string }[] = []

/** Runs src/server.js as its own process, as a deployment would, on a free port. */
async function startInstance(databaseUrl: string) {
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, EMAIL_WEBHOOK_SECRET: TEST_SECRET, DATABASE_URL: databaseUrl, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" line within 20 s: ${output}`)), 20_000)
    child.stdout?.on('data', () => {
      const match = /listening on (\S+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[1] as string)
      }
    })
    child.once('exit', (code) => reject(new Error(`the instance exited (${code}): ${output}`)))
  })
  instances.push({ child, url, output: () => output })
  return instances.at(-1) as (typeof instances)[number]
}

beforeAll(async () => {
  postgres = await sharedPostgres()
})
afterAll(async () => {
  await Promise.all(
    instances.map(
      ({ child }) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve(null)
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
          child.once('exit', () => resolve(clearTimeout(timer)))
          child.kill('SIGTERM')
        }),
    ),
  )
  await postgres?.stop()
})

describe('examples/multi-instance', () => {
  it('handles an event once when its copies reach two instances at the same time', async () => {
    const [a, b] = await Promise.all([startInstance(postgres.url), startInstance(postgres.url)])
    if (!a || !b) throw new Error('two instances')
    // Each instance handles an unrelated event first, so that its store is connected (and the table
    // made) before the race: a cold first claim on a loaded machine can outlast storeTimeoutMs (503).
    // A 503 of this warm-up is sent again, as the sender would.
    for (const instance of [a, b]) {
      const warm = await createSignedDelivery({ type: 'email.bounced' })
      let answer = await fetch(instance.url, { method: 'POST', headers: warm.headers, body: warm.body })
      for (let attempt = 1; answer.status === 503 && attempt < 5; attempt++) {
        answer = await fetch(instance.url, { method: 'POST', headers: warm.headers, body: warm.body })
      }
      expect(answer.status).toBe(200)
    }
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const post = (url: string) => fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body })
    const answers = await Promise.all([post(a.url), post(b.url), post(a.url), post(b.url)])
    const statuses = answers.map((answer) => answer.status)
    // One instance ran the handler; the others answered 200 duplicate (after it) or 409 (during it).
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true)
    expect(statuses).toContain(200)

    // The sender retries the 409s later; by then every copy is a duplicate, on both instances.
    await new Promise((resolve) => setTimeout(resolve, 200))
    for (const url of [a.url, b.url]) {
      const again = await post(url)
      expect(again.status).toBe(200)
      expect(await again.json()).toEqual({ ok: true, duplicate: true })
    }
    const line = `email ${delivery.event.data.id} bounced`
    const runs = (a.output() + b.output()).split('\n').filter((entry) => entry === line)
    expect(runs).toHaveLength(1)
  })
})
