// A durable dedup store over Bun's built-in SQLite (bun:sqlite), for Bun apps that cannot load
// better-sqlite3. Each call is one IMMEDIATE transaction, so a claim is atomic even when several
// processes share the file. Checked with the conformance suite of @email-webhooks/core/testing.
import { Database } from 'bun:sqlite'
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupStore } from '@email-webhooks/core'

interface Row {
  status: 'processing' | 'done'
  token: string | null
  attempt: number
  expires_at: number
}

export class BunSqliteDedupStore implements DedupStore {
  readonly #db: Database
  readonly #claim: (key: string, leaseMs: number) => ClaimResult

  constructor(path: string) {
    this.#db = new Database(path, { create: true, strict: true })
    this.#db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000')
    this.#db.exec(`CREATE TABLE IF NOT EXISTS email_webhook_dedup (
      key TEXT PRIMARY KEY, status TEXT NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL)`)
    const get = this.#db.query<Row, [string]>('SELECT status, token, attempt, expires_at FROM email_webhook_dedup WHERE key = ?')
    const put = this.#db.query(
      'INSERT OR REPLACE INTO email_webhook_dedup (key, status, token, attempt, expires_at) VALUES (?, ?, ?, ?, ?)',
    )
    this.#claim = this.#db.transaction((key: string, leaseMs: number): ClaimResult => {
      const now = Date.now()
      const row = get.get(key)
      if (row && row.expires_at > now) {
        if (row.status === 'done') return { status: 'duplicate' }
        if (row.token !== null) return { status: 'in_flight', retryAfterMs: row.expires_at - now }
      }
      const attempt = row && row.status === 'processing' ? row.attempt + 1 : 1
      const token = crypto.randomUUID()
      put.run(key, 'processing', token, attempt, now + leaseMs)
      return { status: 'acquired', claim: { key, token, attempt } }
    }).immediate
  }

  async claim(key: string, { leaseMs }: ClaimOptions): Promise<ClaimResult> {
    return this.#claim(key, leaseMs)
  }

  async complete(claim: Claim, { retentionMs }: CompleteOptions): Promise<boolean> {
    const now = Date.now()
    const result = this.#db
      .query(
        "UPDATE email_webhook_dedup SET status = 'done', token = NULL, expires_at = ? WHERE key = ? AND token = ? AND status = 'processing' AND expires_at > ?",
      )
      .run(now + retentionMs, claim.key, claim.token, now)
    return result.changes === 1
  }

  async release(claim: Claim): Promise<boolean> {
    const result = this.#db
      .query("UPDATE email_webhook_dedup SET token = NULL, expires_at = 0 WHERE key = ? AND token = ? AND status = 'processing'")
      .run(claim.key, claim.token)
    return result.changes === 1
  }

  async close(): Promise<void> {
    this.#db.close()
  }
}
