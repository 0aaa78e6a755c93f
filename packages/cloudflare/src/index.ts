/**
 * @email-webhooks/cloudflare: durable dedup stores for Cloudflare Workers, for the `store` option of
 * `emailWebhook` (from `@email-webhooks/core` or `@email-webhooks/hono`). `DurableObjectDedupStore`
 * (with the `EmailWebhookDedupObject` class your Worker exports) or `D1DedupStore`. Never KV: it is
 * eventually consistent (a write can take about 60 s to reach other locations), so two copies of
 * an event could both be claimed.
 */
export { type D1DatabaseLike, D1DedupStore, type D1DedupStoreOptions, type D1PreparedStatementLike, DEFAULT_D1_TABLE } from './d1.js'
export { type DedupObjectRequest, type DurableObjectStateLike, EmailWebhookDedupObject } from './dedup-object.js'
export {
  DurableObjectDedupStore,
  type DurableObjectDedupStoreOptions,
  type DurableObjectNamespaceLike,
  type DurableObjectStubLike,
} from './durable-object.js'
export { DEFAULT_SHARDS, MAX_SHARDS, shardOf } from './shards.js'
export { cloudflareDedupTableSql } from './sql.js'
