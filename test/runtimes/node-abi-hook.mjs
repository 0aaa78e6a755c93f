// Loaded with `--import` (through NODE_OPTIONS, so every child process gets it too) when the
// suite runs on a Node version other than the one `pnpm install` built better-sqlite3 for.
// Every module of the workspace's better-sqlite3, whether asked for by name or by a path that
// a bundler (vite) already resolved, is loaded from a copy compiled for this Node's ABI
// (EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR) instead; the workspace's own build stays untouched.
import { registerHooks } from 'node:module'
import { pathToFileURL } from 'node:url'

const dir = process.env.EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR
if (!dir) throw new Error('node-abi-hook.mjs: set EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR to the better-sqlite3 copy built for this Node.')
const copy = pathToFileURL(`${dir}/`).href
const INSIDE_PACKAGE = /\/node_modules\/better-sqlite3\/(.*)$/

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    const match = INSIDE_PACKAGE.exec(resolved.url)
    if (!match || resolved.url.startsWith(copy)) return resolved
    return { ...resolved, url: copy + match[1], shortCircuit: true }
  },
})
