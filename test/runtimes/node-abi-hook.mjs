// Loaded with `--import` (through NODE_OPTIONS, so every child process gets it too) when the
// suite runs on a Node version other than the one `pnpm install` built better-sqlite3 for.
// It points every `better-sqlite3` import and require at a copy compiled for this Node's ABI
// (EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR), leaving the workspace's own build untouched.
import { registerHooks } from 'node:module'
import { pathToFileURL } from 'node:url'

const dir = process.env.EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR
if (!dir) throw new Error('node-abi-hook.mjs: set EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR to the better-sqlite3 copy built for this Node.')
const entry = pathToFileURL(`${dir}/lib/index.js`).href

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === 'better-sqlite3') return { url: entry, format: 'commonjs', shortCircuit: true }
    return nextResolve(specifier, context)
  },
})
