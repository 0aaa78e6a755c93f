// Holds a write lock on the SQLite file at argv[2] for argv[3] ms, as another process writing the
// file would (for sqlite-processes.test.ts). Prints "locked" once it holds the lock.
import { createRequire } from 'node:module'

const Database = createRequire(import.meta.url)('better-sqlite3')
const [path, ms] = process.argv.slice(2)
const db = new Database(path)
db.exec('CREATE TABLE IF NOT EXISTS held (x)')
db.exec('BEGIN IMMEDIATE')
db.exec('INSERT INTO held VALUES (1)')
console.log('locked')
setTimeout(() => {
  db.exec('COMMIT')
  db.close()
}, Number(ms))
