/**
 * `node fill-sqlite.mjs <file> <count>`: a SQLite store file holding `count` done records, as a
 * store that has received events for a week holds them (bench/src/fill.js: random ids, expiries
 * spread over the coming 7 days), for the servers here to start on (EMAIL_WEBHOOKS_DB).
 */
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'
import { fillSqliteStore } from '../src/fill.js'

const [path, countText] = process.argv.slice(2)
const count = Number(countText)
if (!path || !Number.isInteger(count) || count < 0) {
  console.error('usage: node fill-sqlite.mjs <file> <count>')
  process.exit(2)
}
// The store makes its tables (and sets the file's page size), then a connection of ours fills them.
await new SqliteDedupStore({ path }).close()
const db = new Database(path)
const added = await fillSqliteStore(db, { path, count })
db.pragma('wal_checkpoint(TRUNCATE)')
db.close()
console.log(`${added} done records in ${path}`)
