// A durable dedup store over Cloudflare D1, for Workers (where better-sqlite3 cannot run).
// The claim is one atomic upsert: it takes the key if it is new, released, or expired, and
// otherwise changes nothing; complete and release act only while the claim's token owns the key.

/** @typedef {import('@email-webhooks/core').DedupStore} DedupStore */

const TABLE = 'email_webhook_dedup'

/** @implements {DedupStore} */
export class D1DedupStore {
  /** @param {{ prepare(sql: string): any, exec(sql: string): Promise<unknown> }} db the D1 binding */
  constructor(db) {
    this.db = db
    this.ready = undefined
  }

  init() {
    this.ready ??= this.db.exec(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (key TEXT PRIMARY KEY, status TEXT NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL)`,
    )
    return this.ready
  }

  async claim(key, { leaseMs }) {
    await this.init()
    const now = Date.now()
    const token = crypto.randomUUID()
    // In SQLite every SET expression reads the row as it was before the update.
    const won = await this.db
      .prepare(
        `INSERT INTO ${TABLE} (key, status, token, attempt, expires_at) VALUES (?1, 'processing', ?2, 1, ?3 + ?4)
         ON CONFLICT (key) DO UPDATE SET
           attempt = CASE WHEN status = 'processing' THEN attempt + 1 ELSE 1 END,
           status = 'processing', token = excluded.token, expires_at = excluded.expires_at
         WHERE expires_at <= ?3 OR (status = 'processing' AND token IS NULL)
         RETURNING attempt`,
      )
      .bind(key, token, now, leaseMs)
      .first()
    if (won) return { status: 'acquired', claim: { key, token, attempt: won.attempt } }
    const row = await this.db.prepare(`SELECT status, expires_at FROM ${TABLE} WHERE key = ?1`).bind(key).first()
    if (row?.status === 'done') return { status: 'duplicate' }
    return { status: 'in_flight', retryAfterMs: Math.max(1, (row?.expires_at ?? now) - now) }
  }

  async complete(claim, { retentionMs }) {
    await this.init()
    const now = Date.now()
    const result = await this.db
      .prepare(
        `UPDATE ${TABLE} SET status = 'done', token = NULL, expires_at = ?1 + ?2
         WHERE key = ?3 AND token = ?4 AND status = 'processing' AND expires_at > ?1`,
      )
      .bind(now, retentionMs, claim.key, claim.token)
      .run()
    return result.meta.changes === 1
  }

  async release(claim) {
    await this.init()
    const result = await this.db
      .prepare(`UPDATE ${TABLE} SET token = NULL, expires_at = 0 WHERE key = ?1 AND token = ?2 AND status = 'processing'`)
      .bind(claim.key, claim.token)
      .run()
    return result.meta.changes === 1
  }
}
