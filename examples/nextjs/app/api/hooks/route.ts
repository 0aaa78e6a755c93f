// app/api/hooks/route.ts: a Next.js App Router route handler. Next hands it the unread Request, so
// core's fetch handler reads the exact bytes itself.
import { emailWebhook } from '@email-webhooks/core'
import { markBounced } from '../../../lib/db'

// Built on the first request, not at import: `next build` loads this module, without the secret.
// The default store is a SQLite file (./.email-webhooks); on a serverless host pass a store that
// outlives the function instead (PostgresDedupStore, RedisDedupStore).
let handle: ((request: Request) => Promise<Response>) | undefined

export function POST(request: Request): Promise<Response> {
  handle ??= emailWebhook(process.env.EMAIL_WEBHOOK_SECRET ?? '', {
    'email.bounced': async (event) => markBounced(event.data.id),
  })
  return handle(request)
}
