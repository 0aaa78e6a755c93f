// Opens a SqliteDedupStore at argv[2] and prints what happened as one JSON line (for sqlite-wal-open.test.ts).
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'

try {
  new SqliteDedupStore({ path: process.argv[2] }).close()
  console.log(JSON.stringify({ opened: true }))
} catch (error) {
  console.log(JSON.stringify({ opened: false, name: error.name, code: error.code, message: error.message }))
}
