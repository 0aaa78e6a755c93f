import { emailWebhook } from '@email-webhooks/core'
import { DenoKvDedupStore } from '@email-webhooks/core/deno-kv'

const kv = await Deno.openKv(Deno.env.get('EMAIL_WEBHOOKS_KV') ?? 'dedup.kv')
const handle = emailWebhook(
  Deno.env.get('EMAIL_WEBHOOK_SECRET')!,
  { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
  { store: new DenoKvDedupStore(kv) },
)

Deno.serve({ hostname: '127.0.0.1', port: Number(Deno.env.get('PORT') ?? 3000) }, handle)
