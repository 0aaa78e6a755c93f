// Preloaded with `--require` by receiver.test.ts and test/store/sqlite-edges.test.ts: makes better-sqlite3 impossible to load, as
// on a Hono app on Node where it was never installed (or its native build failed).
const Module = require('node:module')
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (request === 'better-sqlite3') {
    const error = new Error("Cannot find module 'better-sqlite3'")
    error.code = 'MODULE_NOT_FOUND'
    throw error
  }
  return resolve.call(this, request, ...rest)
}
