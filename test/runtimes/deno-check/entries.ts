// Type-checked by `deno check` (test/runtimes/deno-check.test.ts): every public entry point of the
// built packages, imported by name through node_modules as a Deno user of the npm packages does.

import { D1DedupStore, DurableObjectDedupStore, EmailWebhookDedupObject } from '@email-webhooks/cloudflare'
import { createReceiver, type DedupStore, emailWebhook, MemoryDedupStore, verifyWebhook } from '@email-webhooks/core'
import { DynamoDBDedupStore } from '@email-webhooks/core/dynamodb'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery, dedupStoreConformance, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'

const store: DedupStore = new MemoryDedupStore()
const handle: (request: Request) => Promise<Response> = emailWebhook(
  TEST_SECRET,
  {
    'email.bounced': (event) => console.log(event.data.id.toUpperCase()),
  },
  { store },
)
const receiver = createReceiver({ secret: TEST_SECRET, store })
export const used: unknown[] = [
  handle,
  receiver,
  verifyWebhook,
  DynamoDBDedupStore,
  D1DedupStore,
  DurableObjectDedupStore,
  EmailWebhookDedupObject,
  PostgresDedupStore,
  RedisDedupStore,
  SqliteDedupStore,
  createSignedDelivery,
  dedupStoreConformance,
  expressWebhook,
  honoWebhook,
]
