/**
 * Many instances behind one store: 3 receiver processes (2 Express, 1 Hono on @hono/node-server)
 * share one PostgreSQL or Redis store; a sender delivers 300 events (1,000 with
 * RELIABILITY_LONG=1), each 3 times, spread
 * across the instances concurrently, and redelivers every non-2xx (as the email service does).
 * Every handler run is appended to a per-process file before the handler's work.
 * Without failures every event is handled exactly once. When one instance is killed with
 * SIGKILL mid-run, its deliveries go to the others: every event is handled, and an event is
 * handled twice only if its first run was on the killed instance and was never acknowledged
 * (at-least-once: the handler may have run before the process died, but complete() had not).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { WebhookEvent } from '@email-webhooks/core'
import { createEvent, createSignedDelivery } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import type { RunningServer } from '../services/servers.js'
import { type ServerKind, sleep, trackChildren, useServers } from '../store/process-harness.js'

const RECEIVER = join(dirname(fileURLToPath(import.meta.url)), 'receiver.mjs')
// 300 events × 3 copies are 900 racing deliveries per run, 24 at a time: every event's copies
// meet in flight on different instances, and the SIGKILL lands with about 24 deliveries open.
const EVENTS = process.env.RELIABILITY_LONG === '1' ? 1_000 : 300
const COPIES = 3
const CONCURRENCY = 24
// The kill test's lease: short, so that the victim's claims lapse within the run.
const LEASE_MS = 2_000
// The steady test's lease: no instance dies there, so a lease that a loaded machine cannot outlast
// (a run slower than the handler deadline of 80% of it would be taken over and run twice).
const STEADY_LEASE_MS = 10_000
const MAX_ATTEMPTS_PER_DELIVERY = 40
const RUN_DEADLINE_MS = 90_000
const FRAMEWORKS = ['express', 'express', 'hono'] as const

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-instances-'))
// After hooks run last-registered first: the servers stop, then the folder goes.
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const servers = useServers()
const children = trackChildren()

interface Instance {
  framework: string
  port: number
  log: string
  child: ChildProcess
  killed: boolean
}

async function startInstances(kind: ServerKind, run: string, leaseMs: number = LEASE_MS): Promise<Instance[]> {
  const url = (servers[kind] as RunningServer).url
  return Promise.all(
    FRAMEWORKS.map(async (framework, index) => {
      const log = join(dir, `${run}-${index}.log`)
      writeFileSync(log, '')
      const child = fork(RECEIVER, [framework, kind, url, log, String(leaseMs)], {
        cwd: dirname(RECEIVER),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      })
      children.add(child)
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${framework} instance not ready within 20 s`)), 20_000)
        child.once('message', (message: { port: number }) => {
          clearTimeout(timer)
          resolve(message.port)
        })
        child.once('exit', (code) => reject(new Error(`${framework} instance exited (${code}) before it was ready`)))
      })
      return { framework, port, log, child, killed: false }
    }),
  )
}

interface SendResult {
  /** For each event id, the instances that answered it 2xx. */
  acks: Map<string, number[]>
  statuses: Map<string, number>
  deliveries: number
}

/**
 * Sends every event COPIES times, copy c of event e first to instance (e + c) % 3, CONCURRENCY
 * requests at a time in event order (so the copies of one event race each other). A non-2xx or a
 * failed connection is redelivered with a fresh signature: after Retry-After on 409, to the next
 * live instance when the connection failed. `onProgress` sees the number of 2xx answers so far.
 */
async function send(events: WebhookEvent[], instances: Instance[], onProgress: (acked: number) => void): Promise<SendResult> {
  const tasks = events.flatMap((event, e) =>
    Array.from({ length: COPIES }, (_, copy) => ({ event, target: (e + copy) % instances.length })),
  )
  const acks = new Map<string, number[]>()
  const statuses = new Map<string, number>()
  const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1)
  const deadline = Date.now() + RUN_DEADLINE_MS
  let next = 0
  let acked = 0
  let deliveries = 0

  async function deliver(task: (typeof tasks)[number]): Promise<void> {
    let target = task.target
    for (let attempt = 1; attempt <= MAX_ATTEMPTS_PER_DELIVERY; attempt++) {
      if (Date.now() > deadline) throw new Error(`the run passed its ${RUN_DEADLINE_MS} ms deadline`)
      while ((instances[target] as Instance).killed) target = (target + 1) % instances.length
      const { headers, body } = await createSignedDelivery({ event: task.event })
      deliveries++
      let response: Response
      try {
        response = await fetch(`http://127.0.0.1:${(instances[target] as Instance).port}/hooks`, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.timeout(10_000),
        })
      } catch {
        count('connection failed')
        await sleep(20)
        continue
      }
      await response.arrayBuffer()
      count(String(response.status))
      if (response.ok) {
        const list = acks.get(task.event.id) ?? []
        list.push(target)
        acks.set(task.event.id, list)
        onProgress(++acked)
        return
      }
      const retryAfter = Number(response.headers.get('retry-after') ?? '0')
      // Sooner than Retry-After (whole seconds), to keep the run short; the lease still has to end.
      await sleep(response.status === 409 ? Math.min(retryAfter * 1000, 250) : 50)
    }
    throw new Error(`event ${task.event.id} was not acknowledged after ${MAX_ATTEMPTS_PER_DELIVERY} attempts`)
  }

  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < tasks.length) await deliver(tasks[next++] as (typeof tasks)[number])
    }),
  )
  return { acks, statuses, deliveries }
}

/** For each event id, the instances whose handler ran it, from the run logs. */
function handlerRuns(instances: Instance[]): Map<string, number[]> {
  const runs = new Map<string, number[]>()
  instances.forEach((instance, index) => {
    for (const id of readFileSync(instance.log, 'utf8').split('\n')) {
      if (!id) continue
      const list = runs.get(id) ?? []
      list.push(index)
      runs.set(id, list)
    }
  })
  return runs
}

describe.each(['postgres', 'redis'] as const)('3 instances (2 Express, 1 Hono) sharing one %s store', (kind) => {
  it(`run each of ${EVENTS} events' handler exactly once when every event is delivered ${COPIES} times across them`, async () => {
    const instances = await startInstances(kind, `${kind}-steady`, STEADY_LEASE_MS)
    const events = Array.from({ length: EVENTS }, () => createEvent('email.bounced'))
    const started = Date.now()
    const result = await send(events, instances, () => {})
    const runs = handlerRuns(instances)
    console.log(
      `${kind}, steady: ${result.deliveries} deliveries in ${Date.now() - started} ms, answers ${JSON.stringify(Object.fromEntries(result.statuses))}, runs per instance ${instances.map((instance) => readFileSync(instance.log, 'utf8').split('\n').filter(Boolean).length).join('/')}`,
    )

    for (const event of events) {
      expect({ id: event.id, runs: runs.get(event.id)?.length ?? 0 }).toEqual({ id: event.id, runs: 1 })
      expect(result.acks.get(event.id)).toHaveLength(COPIES)
    }
    expect(runs.size).toBe(EVENTS)
    // The copies really did meet: some were answered 200 duplicate or 409 in flight, on several instances.
    expect(new Set([...runs.values()].flat()).size).toBe(3)
  }, 150_000)

  it('handle every event, and twice only where the killed instance ran it without acknowledging, when one instance gets SIGKILL mid-run', async () => {
    const instances = await startInstances(kind, `${kind}-kill`)
    const victimIndex = 1
    const victim = instances[victimIndex] as Instance
    const events = Array.from({ length: EVENTS }, () => createEvent('email.bounced'))
    let killedAt = -1
    let acknowledged = 0
    // Once a third of the deliveries are acknowledged, kill the victim as soon as one of its
    // handlers reports that it started: most likely before that handler's complete().
    victim.child.on('message', (message: { type: string }) => {
      if (message.type !== 'running' || victim.killed || acknowledged < Math.floor((EVENTS * COPIES) / 3)) return
      victim.killed = true
      killedAt = acknowledged
      victim.child.kill('SIGKILL')
    })
    const result = await send(events, instances, (acked) => {
      acknowledged = acked
    })
    await new Promise((resolve) =>
      victim.child.exitCode === null && victim.child.signalCode === null ? victim.child.once('exit', resolve) : resolve(null),
    )
    expect(victim.child.signalCode).toBe('SIGKILL')
    const runs = handlerRuns(instances)

    const twice: string[] = []
    for (const event of events) {
      const ran = runs.get(event.id) ?? []
      expect({ id: event.id, handled: ran.length >= 1 }).toEqual({ id: event.id, handled: true })
      expect(result.acks.get(event.id)).toHaveLength(COPIES)
      if (ran.length === 1) continue
      twice.push(event.id)
      // A second run is allowed only after a run on the killed instance that it never acknowledged.
      expect({ id: event.id, ran: [...ran].sort() }).toEqual({ id: event.id, ran: expect.arrayContaining([victimIndex]) })
      expect(ran).toHaveLength(2)
      expect(ran.filter((index) => index === victimIndex)).toHaveLength(1)
      expect(result.acks.get(event.id)).not.toContain(victimIndex)
    }
    const victimRuns = readFileSync(victim.log, 'utf8').split('\n').filter(Boolean).length
    console.log(
      `${kind}, SIGKILL of instance ${victimIndex} (${victim.framework}) after ${killedAt} acknowledged deliveries, as one of its handlers started: ${result.deliveries} deliveries, answers ${JSON.stringify(Object.fromEntries(result.statuses))}; the victim ran ${victimRuns} handlers; ${twice.length} event(s) ran twice (killed before complete): ${twice.join(', ') || 'none'}`,
    )
    expect(killedAt).toBeGreaterThan(0)
    expect(victimRuns).toBeGreaterThan(0)
  }, 150_000)
})
