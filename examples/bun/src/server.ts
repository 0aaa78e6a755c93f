import { emailWebhook } from '@email-webhooks/core'
import { BunSqliteDedupStore } from './bun-sqlite-store.ts'

const handle = emailWebhook(
  process.env.EMAIL_WEBHOOK_SECRET!,
  { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
  { store: new BunSqliteDedupStore(process.env.EMAIL_WEBHOOKS_DB ?? 'dedup.sqlite') },
)

const server = Bun.serve({ hostname: '127.0.0.1', port: Number(process.env.PORT ?? 3000), fetch: handle })
console.log(`listening on http://${server.hostname}:${server.port}/hooks`)
