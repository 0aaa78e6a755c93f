/**
 * The public surface of `@email-webhooks/core/console`, ESM and CommonJS alike: a name added or
 * removed is a decision, made here on purpose.
 */
import { createRequire } from 'node:module'
import * as consoleEntry from '@email-webhooks/core/console'
import { expect, it } from 'vitest'

const EXPORTS = [
  'CONSOLE_CSP',
  'DEFAULT_CONSOLE_STORE_TIMEOUT_MS',
  'MIN_CONSOLE_PASSWORD_LENGTH',
  'WebhookConsoleError',
  'consoleRequestFromNode',
  'emailWebhookConsole',
  'writeConsoleResponse',
]

it('exports exactly these names, from import and from require', () => {
  expect(Object.keys(consoleEntry).sort()).toEqual(EXPORTS)
  const required = createRequire(import.meta.url)('@email-webhooks/core/console') as Record<string, unknown>
  expect(Object.keys(required).sort()).toEqual(EXPORTS)
})

it('finds the reads a store registered whichever entry (ESM or CommonJS) made the store', async () => {
  const required = createRequire(import.meta.url)
  const { SqliteDedupStore } = required('@email-webhooks/core/sqlite') as typeof import('@email-webhooks/core/sqlite')
  const store = new SqliteDedupStore({ path: ':memory:' })
  const handler = consoleEntry.emailWebhookConsole({ store, auth: { username: 'ops', password: 'twelve chars!' } })
  const page = await handler(new Request('http://x/', { headers: { authorization: `Basic ${btoa('ops:twelve chars!')}` } }))
  expect(await page.text()).toContain('SQLite · :memory:')
  await store.close()
})
