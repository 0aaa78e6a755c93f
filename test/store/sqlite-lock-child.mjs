// Holds a lock on the SQLite file at argv[2] for argv[4] ms, as another process using the file
// would (for sqlite-processes.test.ts): argv[3] 'shared' (an open read), 'reserved' (a write
// under way) or 'exclusive' (a write committing).
// Prints "locked" once it holds the lock.
import { createRequire } from 'node:module'

const Database = createRequire(import.meta.url)('better-sqlite3')
const [path, kind, ms] = process.argv.slice(2)
const db = new Database(path)
db.exec('CREATE TABLE IF NOT EXISTS held (x)')
if (kind === 'shared') {
  db.exec('BEGIN')
  db.prepare('SELECT count(*) FROM held').get()
} else if (kind === 'reserved') {
  db.exec('BEGIN IMMEDIATE')
  db.exec('INSERT INTO held VALUES (1)')
} else db.exec('BEGIN EXCLUSIVE')
console.log('locked')
setTimeout(() => {
  db.exec('COMMIT')
  db.close()
}, Number(ms))
