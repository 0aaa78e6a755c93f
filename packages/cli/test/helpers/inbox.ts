// Test helpers for the `inbox` commands: events queued by a real inbox-mode receiver (core's
// createReceiver with signed deliveries) into a real store, handler modules written to disk, and
// the lines of files those modules append to.
import { existsSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createReceiver, type DedupStore, type EmailEventType } from '@email-webhooks/core'
import { createSignedDelivery } from '@email-webhooks/core/testing'
import { expect } from 'vitest'
import { SECRET } from './cli.js'

export interface Queued {
  id: string
  body: string
  emailId: string
}

/**
 * Queues `count` events through an inbox-mode receiver (its own worker off), as the sender would
 * deliver them; each answer is checked to be 200 queued.
 */
export async function queueEvents(
  store: DedupStore,
  count: number,
  options: { type?: EmailEventType; namespace?: string } = {},
): Promise<Queued[]> {
  const receiver = createReceiver({
    secret: SECRET,
    store,
    logger: false,
    mode: 'inbox',
    inbox: { worker: false },
    ...(options.namespace ? { namespace: options.namespace } : {}),
  })
  const queued: Queued[] = []
  for (let i = 0; i < count; i++) {
    const delivery = await createSignedDelivery({ secret: SECRET, type: options.type ?? 'email.bounced' })
    const answer = await receiver.receive({ headers: delivery.headers, body: delivery.body })
    expect([answer.status, answer.body]).toEqual([200, '{"ok":true,"queued":true}'])
    queued.push({ id: delivery.event.id, body: delivery.body, emailId: (delivery.event.data as { id: string }).id })
  }
  return queued
}

/**
 * Writes a handlers module that appends each event id to `<log>.started` when its handler starts
 * and to `<log>` when it ends (or throws `fail` instead), after `delayMs`.
 */
export async function writeHandlers(
  path: string,
  log: string,
  behaviour: { fail?: string; delayMs?: number; options?: string; commonJs?: boolean } = {},
): Promise<void> {
  const body = [
    `appendFileSync(${JSON.stringify(`${log}.started`)}, event.id + '\\n')`,
    behaviour.delayMs ? `await new Promise((resolve) => setTimeout(resolve, ${behaviour.delayMs}))` : '',
    behaviour.fail ? `throw new Error(${JSON.stringify(behaviour.fail)})` : `appendFileSync(${JSON.stringify(log)}, event.id + '\\n')`,
  ].filter(Boolean)
  const handler = `async (event) => {\n    ${body.join('\n    ')}\n  }`
  const options = behaviour.options ?? '{}'
  const source = behaviour.commonJs
    ? `const { appendFileSync } = require('node:fs')\nmodule.exports = {\n  handlers: { 'email.bounced': ${handler} },\n  options: ${options},\n}\n`
    : `import { appendFileSync } from 'node:fs'\nexport const handlers = { 'email.bounced': ${handler} }\nexport const options = ${options}\n`
  await writeFile(path, source)
}

/** The lines of a file a handlers module appends to (none when it does not exist). */
export function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []
}

/** A path in `dir`. */
export const at = (dir: string, name: string): string => join(dir, name)
