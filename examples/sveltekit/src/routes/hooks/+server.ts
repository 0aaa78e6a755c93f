// src/routes/hooks/+server.ts: a SvelteKit endpoint. SvelteKit hands it the unread Request, so
// core's fetch handler reads the exact bytes itself. (In the app, type POST as RequestHandler from
// './$types', and read the secret from `env` of '$env/dynamic/private' if you prefer.)
import { emailWebhook } from '@email-webhooks/core'
import { markBounced } from '../../lib/server/db'

// Built on the first request, not at import: `vite build` loads this module, without the secret.
let handle: ((request: Request) => Promise<Response>) | undefined

export function POST({ request }: { request: Request }): Promise<Response> {
  handle ??= emailWebhook(process.env.EMAIL_WEBHOOK_SECRET ?? '', {
    'email.bounced': async (event) => markBounced(event.data.id),
  })
  return handle(request)
}
