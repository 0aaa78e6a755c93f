// Inbox mode on Cloudflare Workers with Cloudflare Queues. `fetch` verifies each delivery and sends it
// to the queue (binding QUEUE), answering 200 once the queue accepted it; `queue` (this Worker is also
// the queue's consumer, see wrangler.toml) runs the handlers, acknowledging each message or retrying it
// later. Queues do not deduplicate: a redelivery is a second message, and the D1 dedup store that both
// share makes it run no handler (as it does for a message the queue delivers twice).

import { D1DedupStore } from '@email-webhooks/cloudflare'
import { createInboxProcessor, emailWebhook } from '@email-webhooks/core'

let handle
let processor

export default {
  async fetch(request, env) {
    handle ??= emailWebhook(
      env.EMAIL_WEBHOOK_SECRET,
      {},
      {
        mode: 'inbox',
        inbox: {
          sink: {
            async enqueue(item) {
              await env.QUEUE.send(item)
              return 'queued'
            },
          },
        },
        store: new D1DedupStore(env.DB),
      },
    )
    return handle(request)
  },

  async queue(batch, env) {
    processor ??= createInboxProcessor({
      handlers: { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
      store: new D1DedupStore(env.DB),
    })
    for (const message of batch.messages) {
      try {
        await processor.process(message.body)
        message.ack()
      } catch {
        // The processor logged why. Back off exponentially, with jitter; after max_retries the
        // message goes to the dead letter queue.
        message.retry({ delaySeconds: Math.min(600, Math.ceil(2 ** message.attempts * (0.5 + Math.random() / 2))) })
      }
    }
  },
}
