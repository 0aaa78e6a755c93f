// A dedup store over a table in the application's own database: here an existing
// better-sqlite3 connection, with the logic in one IMMEDIATE transaction per call (so claim
// is atomic even across processes). Checked with the conformance suite from
// @email-webhooks/core/testing, like the built-in stores.

/** @typedef {import('@email-webhooks/core').DedupStore} DedupStore */

/** @implements {DedupStore} */
export class AppDbDedupStore {
  /** @param {import('better-sqlite3').Database} db the app's connection */
  constructor(db) {
    this.db = db
    db.exec(`CREATE TABLE IF NOT EXISTS processed_webhooks (
      key TEXT PRIMARY KEY, status TEXT NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL)`)
    const get = db.prepare('SELECT status, token, attempt, expires_at FROM processed_webhooks WHERE key = ?')
    const put = db.prepare('INSERT OR REPLACE INTO processed_webhooks (key, status, token, attempt, expires_at) VALUES (?, ?, ?, ?, ?)')
    this.claimTx = db.transaction((key, leaseMs) => {
      const now = Date.now()
      const row = get.get(key)
      if (row && row.expires_at > now) {
        return row.status === 'done' ? { status: 'duplicate' } : { status: 'in_flight', retryAfterMs: row.expires_at - now }
      }
      const attempt = row && row.status !== 'done' ? row.attempt + 1 : 1
      const token = crypto.randomUUID()
      put.run(key, 'processing', token, attempt, now + leaseMs)
      return { status: 'acquired', claim: { key, token, attempt } }
    })
    this.completeStmt = db.prepare(
      "UPDATE processed_webhooks SET status = 'done', token = NULL, expires_at = ? WHERE key = ? AND token = ? AND status = 'processing'",
    )
    this.releaseStmt = db.prepare(
      "UPDATE processed_webhooks SET token = NULL, expires_at = 0 WHERE key = ? AND token = ? AND status = 'processing'",
    )
  }

  async claim(key, { leaseMs }) {
    // .immediate takes the write lock first, so two processes cannot both read "free".
    return this.claimTx.immediate(key, leaseMs)
  }

  async complete(claim, { retentionMs }) {
    return this.completeStmt.run(Date.now() + retentionMs, claim.key, claim.token).changes === 1
  }

  async release(claim) {
    return this.releaseStmt.run(claim.key, claim.token).changes === 1
  }
}
