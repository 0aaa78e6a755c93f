// The dedup store every execution environment of the function shares, so that a retried event runs
// its handler once however many environments Lambda starts: DynamoDB (DEDUP_TABLE, the table of
// template.yaml; the documented default), PostgreSQL (DATABASE_URL) or Redis (REDIS_URL). Built once
// per environment, at module scope, and reused by each invocation it serves.
import { DynamoDBDedupStore } from '@email-webhooks/core/dynamodb'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'

/** @param {Record<string, string | undefined>} env */
export function createStore(env) {
  // The region comes from AWS_REGION, which Lambda sets; the credentials from the function's role.
  if (env.DEDUP_TABLE) return new DynamoDBDedupStore({ table: env.DEDUP_TABLE })
  if (env.DATABASE_URL) return new PostgresDedupStore({ connectionString: env.DATABASE_URL })
  if (env.REDIS_URL) return new RedisDedupStore({ url: env.REDIS_URL })
  throw new Error('Set DEDUP_TABLE (DynamoDB), DATABASE_URL (PostgreSQL) or REDIS_URL (Redis): on Lambda, dedup must outlive the function.')
}
