// The types of app.js, for the TypeScript tests that run it.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { DedupStore, InboxOptions } from '@email-webhooks/core'
import type { EmailWebhookMiddleware, ExpressEventHandlers } from '@email-webhooks/express'

export declare function createApp(options: {
  secret: string
  consolePassword: string
  handlers: ExpressEventHandlers
  store?: DedupStore
  inbox?: InboxOptions
}): { app: (req: IncomingMessage, res: ServerResponse) => void; webhook: EmailWebhookMiddleware }
