// Preloaded with `--require` by receiver.test.ts: better-sqlite3 is installed but its native module
// was never built (npm install --ignore-scripts, or npm's install-script policy skipped it). The
// real package's JavaScript and its `bindings` dependency are copied to a temporary folder without
// the build output, and `require('better-sqlite3')` resolves there, so the first `new Database()`
// fails exactly as it does then: "Could not locate the bindings file. Tried: …".
const Module = require('node:module')
const { cpSync, mkdtempSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { dirname, join } = require('node:path')

const core = dirname(require.resolve('@email-webhooks/core/package.json', { paths: [__dirname] }))
const real = dirname(require.resolve('better-sqlite3/package.json', { paths: [core] }))
const bindings = dirname(require.resolve('bindings/package.json', { paths: [real] }))
const fileUri = dirname(require.resolve('file-uri-to-path/package.json', { paths: [bindings] }))
// The copy's folder is not named `better-sqlite3`: the Node 22/24 matrix's ABI hook
// (test/runtimes/node-abi-hook.mjs) sends every path inside a `node_modules/better-sqlite3/` to
// the build for that Node, and this copy must stay unbuilt there too.
const modules = join(mkdtempSync(join(tmpdir(), 'unbuilt-sqlite-')), 'node_modules')
const copy = join(modules, 'better-sqlite3-unbuilt')
cpSync(real, copy, { recursive: true, filter: (source) => !source.startsWith(join(real, 'build')) })
cpSync(bindings, join(modules, 'bindings'), { recursive: true })
cpSync(fileUri, join(modules, 'file-uri-to-path'), { recursive: true })
process.on('exit', () => require('node:fs').rmSync(dirname(modules), { recursive: true, force: true }))

const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (request === 'better-sqlite3') return join(copy, 'lib', 'index.js')
  return resolve.call(this, request, ...rest)
}
