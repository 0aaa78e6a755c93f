/**
 * The scenario every receiver runs against the faithful sender: healthy deliveries, then a
 * broken handler until the sender disables the endpoint (10 failures in a row), then the fix
 * and recoverEndpoint(), which must bring every event back so each handler ran exactly once.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { DedupStore } from '@email-webhooks/core'
import { createWebhooksClient, type RecoveryReport, recoverEndpoint } from '@email-webhooks/core/api'
import { createFaithfulSender, type FaithfulSender, listenSender, TEST_API_KEY } from '@email-webhooks/core/testing'
import { expect } from 'vitest'

/** A receiver under test: built once the endpoint secret is known. */
export interface ScenarioReceiver {
  /** Node request listener of the app. */
  listener: (req: IncomingMessage, res: ServerResponse) => unknown
  /** The store recoverEndpoint reads (the receiver's own, or one on the same file/server). */
  recoveryStore?: DedupStore
  close?: () => unknown
}

/** What the handler side records: runs per email id (each event carries a fresh one). */
export interface HandlerLog {
  broken: boolean
  runs: Map<string, number>
}

/** The bounce handler the scenario's apps use: counts a run, throws while broken. */
export function bounceHandler(log: HandlerLog): (emailId: string) => void {
  return (emailId) => {
    if (log.broken) throw new Error('database unavailable (simulated)')
    log.runs.set(emailId, (log.runs.get(emailId) ?? 0) + 1)
  }
}

/** Seeded randomness so reordering and repeats are the same on every run. */
function seeded(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31
    return x / 2 ** 31
  }
}

/** Runs the scenario; `build` makes the receiver app for the secret and the handler log. */
export async function runRecoveryScenario(
  build: (secret: string, log: HandlerLog) => Promise<ScenarioReceiver> | ScenarioReceiver,
): Promise<{ sender: FaithfulSender; report: RecoveryReport }> {
  const log: HandlerLog = { broken: false, runs: new Map() }
  let receiver: ScenarioReceiver | undefined
  const server = createServer((req, res) => receiver?.listener(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  // Two attempts per delivery: the five lost events spend their budgets with the 10th failure, which
  // disables the endpoint, so each waits for a retry by hand (a delivery with attempts left would be
  // paused instead, and resumed by the sender itself once recover re-enables the endpoint).
  const sender = createFaithfulSender({
    timeScale: 0.0005,
    maxAttempts: 2,
    repeatProbability: 0.3,
    reorderWindowMs: 20,
    random: seeded(42),
  })
  const api = await listenSender(sender)
  try {
    const { id: endpointId, secret } = sender.createEndpoint(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`)
    receiver = await build(secret, log)
    const emit = () => sender.emit({ type: 'email.bounced' }).event.data.id as string

    const healthy = [emit(), emit(), emit()]
    await sender.idle()
    log.broken = true
    const lost = [emit(), emit(), emit(), emit(), emit()]
    await sender.idle()
    expect(sender.endpoint(endpointId)?.enabled).toBe(false)
    expect(sender.attempts.filter((a) => !a.ok && !a.repeat).length).toBeGreaterThanOrEqual(10)
    expect([...log.runs.keys()].sort()).toEqual([...healthy].sort())

    log.broken = false
    const client = createWebhooksClient({ apiKey: TEST_API_KEY, baseUrl: api.baseUrl })
    const dry = await recoverEndpoint({ client, endpointId, store: receiver.recoveryStore, dryRun: true })
    expect([dry.enable, dry.retried.length]).toEqual(['would_reenable', lost.length])
    expect(sender.endpoint(endpointId)?.enabled).toBe(false)

    const report = await recoverEndpoint({ client, endpointId, store: receiver.recoveryStore, spacingMs: 5 })
    await sender.idle()
    expect(report.enable).toBe('reenabled')
    expect(report.retried).toHaveLength(lost.length)
    expect(report.alreadyHandled).toHaveLength(healthy.length)
    expect([report.expired, report.failed]).toEqual([[], []])
    for (const item of report.retried) expect(item.requestId).toMatch(/^[0-9a-f-]{36}$/)
    // Every event, healthy or lost, ran its handler exactly once.
    expect(Object.fromEntries(log.runs)).toEqual(Object.fromEntries([...healthy, ...lost].map((id) => [id, 1])))
    expect(sender.endpoint(endpointId)).toMatchObject({ enabled: true, failures: 0 })

    const again = await recoverEndpoint({ client, endpointId, store: receiver.recoveryStore, spacingMs: 0 })
    await sender.idle()
    expect([again.enable, again.retried.length, again.alreadyHandled.length]).toEqual(['already', 0, healthy.length + lost.length])
    expect(Object.fromEntries(log.runs)).toEqual(Object.fromEntries([...healthy, ...lost].map((id) => [id, 1])))
    return { sender, report }
  } finally {
    sender.close()
    await api.close()
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    await receiver?.close?.()
  }
}
