// Child of postgres-connect-race.test.ts. Deterministic repro: a fake PostgreSQL that finishes the startup (AuthenticationOk, ReadyForQuery)
// and sends FATAL 57P01 in the same TCP write, as a backend that has just started and gets the
// postmaster's SIGTERM of `pg_ctl stop -m fast` can. The client's ReadyForQuery hands it out of the
// pool (pg-pool removes its idle 'error' listener) and the ErrorResponse is parsed in the same
// 'data' callback, before the store's onConnection (a .then, a microtask later) adds its own.
import net from 'node:net'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import pg from 'pg'

const msg = (type, body) => {
  const b = Buffer.alloc(5 + body.length)
  b.write(type, 0)
  b.writeInt32BE(4 + body.length, 1)
  body.copy(b, 5)
  return b
}
const int32 = (n) => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}
const fatal = msg('E', Buffer.from('SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0'))
const server = net.createServer((socket) => {
  socket.once('data', () => socket.write(Buffer.concat([msg('R', int32(0)), msg('Z', Buffer.from('I')), fatal])))
  socket.on('error', () => {})
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const connectionString = `postgres://u:p@127.0.0.1:${server.address().port}/db`
// `given`: a pg.Pool of the app's (with its own pool-level listener, as the store's docs ask).
const pool = process.argv[2] === 'given' ? new pg.Pool({ connectionString, connectionTimeoutMillis: 1_000 }) : undefined
pool?.on('error', () => {})
const store = pool ? new PostgresDedupStore({ pool }) : new PostgresDedupStore({ connectionString })
try {
  await store.lookup('default:x')
} catch (error) {
  console.log(`rejected ${error.code}`)
}
await store.close().catch(() => {})
await pool?.end().catch(() => {})
server.close()
