// A DynamoDB-compatible server for the tests and the bench: dynalite (npm), in memory, on
// 127.0.0.1 and a free port, tables ACTIVE at once. Prints `dynalite http://127.0.0.1:<port>`,
// then runs until stopped (SIGTERM) or until its parent goes away (stdin closes).
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const dynalite = require('dynalite')
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => {
  console.log(`dynalite http://127.0.0.1:${server.address().port}`)
})
const stop = () => server.close(() => process.exit(0))
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.stdin.on('end', stop)
process.stdin.resume()
