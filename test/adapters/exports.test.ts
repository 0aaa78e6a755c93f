/**
 * The public surface of each adapter and store package (and of core's serverless store subpaths),
 * guarded: the run-time exports of its built ESM and CJS entries. A new export (or one gone) is a decision, made here on purpose; types are checked by
 * test/types.
 */
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'

const require = createRequire(import.meta.url)

const EXPORTS: Record<string, string[]> = {
  '@email-webhooks/express': ['captureRawBody', 'emailWebhook', 'emailWebhookConsole'],
  '@email-webhooks/hono': ['emailWebhook', 'emailWebhookConsole'],
  '@email-webhooks/fastify': ['emailWebhook', 'emailWebhookConsole'],
  '@email-webhooks/koa': ['emailWebhook', 'emailWebhookConsole'],
  '@email-webhooks/lambda': ['emailWebhook'],
  '@email-webhooks/cloudflare': [
    'D1DedupStore',
    'DEFAULT_D1_TABLE',
    'DEFAULT_SHARDS',
    'DurableObjectDedupStore',
    'EmailWebhookDedupObject',
    'MAX_SHARDS',
    'cloudflareDedupTableSql',
    'shardOf',
  ],
  '@email-webhooks/core/dynamodb': [
    'DEFAULT_DYNAMODB_CALL_TIMEOUT_MS',
    'DEFAULT_DYNAMODB_PARTITION_KEY',
    'DEFAULT_DYNAMODB_TABLE',
    'DYNAMODB_IAM_ACTIONS',
    'DYNAMODB_TTL_ATTRIBUTE',
    'DynamoDBDedupStore',
    'dynamoDBTableInput',
  ],
  '@email-webhooks/core/deno-kv': ['DEFAULT_DENO_KV_PREFIX', 'DenoKvDedupStore'],
  '@email-webhooks/bullmq': ['BULLMQ_JOB_DEFAULTS', 'bullmqJobId', 'bullmqProcessor', 'bullmqSink'],
  '@email-webhooks/pg-boss': ['PG_BOSS_JOB_DEFAULTS', 'pgBossJobId', 'pgBossSink', 'pgBossWork'],
}

describe('adapter exports', () => {
  for (const [name, expected] of Object.entries(EXPORTS)) {
    it(`${name} exports exactly ${expected.join(', ')} from its ESM and CJS entries`, async () => {
      expect(Object.keys(await import(name)).sort()).toEqual(expected)
      expect(Object.keys(require(name)).sort()).toEqual(expected)
    })
  }
})
