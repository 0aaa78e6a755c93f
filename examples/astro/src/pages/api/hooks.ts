// src/pages/api/hooks.ts: an Astro endpoint, served on demand (an SSR adapter such as @astrojs/node).
// Astro hands it the unread Request, so core's fetch handler reads the exact bytes itself. (In the
// app, type POST as APIRoute from 'astro'.)
import { emailWebhook } from '@email-webhooks/core'
import { markBounced } from '../../lib/db'

export const prerender = false

// Built on the first request, not at import: `astro build` loads this module, without the secret.
let handle: ((request: Request) => Promise<Response>) | undefined

export function POST({ request }: { request: Request }): Promise<Response> {
  handle ??= emailWebhook(process.env.EMAIL_WEBHOOK_SECRET ?? '', {
    'email.bounced': async (event) => markBounced(event.data.id),
  })
  return handle(request)
}
