// Elysia on Bun: EMAIL_WEBHOOK_SECRET=... bun src/server.ts
import { emailWebhook } from '@email-webhooks/core'
import { Elysia } from 'elysia'
// The Bun example's store (examples/bun): dedup in bun:sqlite, which survives a restart.
import { BunSqliteDedupStore } from '../../bun/src/bun-sqlite-store.ts'

const handle = emailWebhook(
  process.env.EMAIL_WEBHOOK_SECRET!,
  { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
  { store: new BunSqliteDedupStore(process.env.EMAIL_WEBHOOKS_DB ?? 'dedup.sqlite') },
)

// parse: 'none' keeps Elysia from reading the body, so the fetch handler reads the exact bytes.
const app = new Elysia()
  .post('/hooks', ({ request }) => handle(request), { parse: 'none' })
  .listen({ hostname: '127.0.0.1', port: Number(process.env.PORT ?? 3000) })
console.log(`listening on http://${app.server?.hostname}:${app.server?.port}/hooks`)
