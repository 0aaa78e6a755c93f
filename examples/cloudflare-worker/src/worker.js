import { DurableObjectDedupStore } from '@email-webhooks/cloudflare'
import { emailWebhook } from '@email-webhooks/core'

// The Durable Object class that keeps the dedup records, bound as EMAIL_WEBHOOK_DEDUP (wrangler.toml).
export { EmailWebhookDedupObject } from '@email-webhooks/cloudflare'

let handle

export default {
  async fetch(request, env) {
    handle ??= emailWebhook(
      env.EMAIL_WEBHOOK_SECRET,
      { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
      { store: new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP) },
    )
    return handle(request)
  },
}
