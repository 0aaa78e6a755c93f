/**
 * The deliveries every runtime example is tested with, sent over HTTP to a running server:
 * a valid bounce, its redelivery (fresh timestamp and signature), a tampered body, a stale
 * timestamp and an unknown type, and the answers expected for each.
 */
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { expect } from 'vitest'
import type { Server } from './runtimes.js'

export interface ExampleAnswer {
  name: string
  status: number
  body: unknown
}

export const EXPECTED_ANSWERS: ExampleAnswer[] = [
  { name: 'valid', status: 200, body: { ok: true } },
  { name: 'duplicate', status: 200, body: { ok: true, duplicate: true } },
  { name: 'tampered', status: 401, body: { error: { code: 'signature_mismatch' } } },
  { name: 'stale', status: 401, body: { error: { code: 'timestamp_too_old' } } },
  { name: 'unknown type', status: 200, body: { ok: true } },
]

/** Sends the five deliveries to `url` in order; returns each answer (error messages left out) and the bounced email's id. */
export async function sendExampleDeliveries(
  url: string,
  secret: string = TEST_SECRET,
): Promise<{ answers: ExampleAnswer[]; emailId: string }> {
  const valid = await createSignedDelivery({ type: 'email.bounced', secret })
  const duplicate = await createSignedDelivery({ event: valid.event, secret })
  const other = await createSignedDelivery({ type: 'email.bounced', secret })
  const tampered = { ...other, body: other.body.replace('email.bounced', 'email.queued') }
  const stale = await createSignedDelivery({ type: 'email.bounced', secret, timestamp: Math.floor(Date.now() / 1000) - 301 })
  const unknown = await createSignedDelivery({ type: 'organization.updated', secret })
  const answers: ExampleAnswer[] = []
  for (const [name, delivery] of [
    ['valid', valid],
    ['duplicate', duplicate],
    ['tampered', tampered],
    ['stale', stale],
    ['unknown type', unknown],
  ] as const) {
    const res = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body, signal: AbortSignal.timeout(10_000) })
    const json = (await res.json()) as { ok?: boolean; duplicate?: boolean; error?: { code: string } }
    answers.push({ name, status: res.status, body: json.error ? { error: { code: json.error.code } } : json })
  }
  return { answers, emailId: valid.event.data.id as string }
}

/** A bundled file a non-Node runtime must never load: better-sqlite3, the SQLite store, the Node crypto or store, a `node:` module. */
export const NODE_ONLY_FILE: RegExp = /better-sqlite3|sqlite\.js|crypto-node|default-store-node|^node:/

/** Sends the example deliveries to a running server; checks every answer and that the bounce handler ran exactly once. */
export async function expectExampleAnswers(server: Server): Promise<void> {
  const { answers, emailId } = await sendExampleDeliveries(`${server.url}/hooks`)
  expect(answers).toEqual(EXPECTED_ANSWERS)
  expect(server.output().split(`email ${emailId} bounced`)).toHaveLength(2)
}

/** Sends one bounce to a fresh server, stops it, starts it again and re-sends: the second answer must be a duplicate. */
export async function expectDedupAcrossRestart(start: () => Promise<Server>): Promise<void> {
  const delivery = await createSignedDelivery({ type: 'email.bounced' })
  const answers: [number, unknown][] = []
  for (let run = 0; run < 2; run++) {
    const server = await start()
    try {
      const res = await fetch(`${server.url}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body })
      answers.push([res.status, await res.json()])
    } finally {
      await server.stop()
    }
  }
  expect(answers).toEqual([
    [200, { ok: true }],
    [200, { ok: true, duplicate: true }],
  ])
}
