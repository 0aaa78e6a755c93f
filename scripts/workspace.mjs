// What `npm run demo` and `npm test` share: pnpm without a global install, dependencies
// installed from the lockfile, packages rebuilt only when their sources changed, and steps
// that say how long they took.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { setPriority } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const PNPM_VERSION = '12'
const PACKAGES = ['core', 'express', 'hono', 'fastify', 'koa', 'lambda', 'cloudflare', 'bullmq', 'pg-boss', 'cli']
const BUILD_STAMPS = join(ROOT, 'node_modules/.cache/email-webhooks-build')
const color = process.stdout.isTTY && !process.env.NO_COLOR
const dim = (text) => (color ? `\x1b[2m${text}\x1b[22m` : text)
const bold = (text) => (color ? `\x1b[1m${text}\x1b[22m` : text)

/** The command that runs pnpm 12: the pnpm that started us, or npx (nothing to install globally). */
export function pnpmCommand() {
  const execPath = process.env.npm_execpath ?? ''
  if (/pnpm/.test(execPath) && process.env.npm_config_user_agent?.startsWith(`pnpm/${PNPM_VERSION}.`)) {
    return [process.execPath, [execPath]]
  }
  return ['npx', ['-y', `pnpm@${PNPM_VERSION}`]]
}

/**
 * Runs a command; resolves with its exit code. `quiet` keeps its output unless it fails, and
 * prints a line every 15 s so a long step is never silent.
 */
export function run(command, args, options = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: options.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    })
    // A lower priority (`nice`), for work that may take what the others leave of the CPU.
    if (options.nice && child.pid !== undefined) {
      try {
        setPriority(child.pid, options.nice)
      } catch {}
    }
    let output = ''
    child.stdout?.on('data', (chunk) => {
      output += chunk
    })
    child.stderr?.on('data', (chunk) => {
      output += chunk
    })
    const started = Date.now()
    const ticker =
      options.quiet && options.label
        ? setInterval(() => console.log(dim(`  … ${options.label}: ${Math.round((Date.now() - started) / 1000)} s`)), 15_000)
        : undefined
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (ticker) clearInterval(ticker)
      if (code !== 0 && options.quiet) process.stdout.write(output.slice(-8000))
      resolvePromise(code ?? (signal ? 1 : 0))
    })
  })
}

/** Records how long each step took; `summary()` prints them as a table. */
export function createSteps(title) {
  const done = []
  const began = Date.now()
  return {
    /**
     * Runs `fn` (which returns an exit code or nothing) as a named step; exits on failure unless
     * `continueOnFailure`, and resolves with the exit code.
     */
    async step(name, fn, { continueOnFailure = false } = {}) {
      console.log(bold(`\n▶ ${name}`))
      const started = Date.now()
      const code = (await fn()) ?? 0
      const seconds = (Date.now() - started) / 1000
      done.push({ name, seconds, ok: code === 0 })
      if (code !== 0 && !continueOnFailure) {
        this.summary()
        console.error(`\n✗ ${name} failed (exit ${code}).`)
        process.exit(code)
      }
      return code
    },
    /**
     * Runs named steps side by side (for work that waits more than it computes, beside work that
     * computes); each is timed on its own. Once all have ended, exits if one failed.
     */
    async together(steps) {
      console.log(bold(`\n▶ ${steps.map((s) => s.name).join(' | ')} (side by side)`))
      const results = await Promise.all(
        steps.map(async ({ name, fn }) => {
          const started = Date.now()
          const code = (await fn()) ?? 0
          const seconds = (Date.now() - started) / 1000
          console.log(`${code === 0 ? '✓' : '✗'} ${name}: ${seconds.toFixed(0)} s`)
          return { name, seconds, ok: code === 0, code }
        }),
      )
      done.push(...results.map(({ name, seconds, ok }) => ({ name, seconds, ok })))
      const failed = results.find((r) => !r.ok)
      if (failed) {
        this.summary()
        console.error(`\n✗ ${failed.name} failed (exit ${failed.code}).`)
        process.exit(failed.code)
      }
    },
    summary() {
      const total = (Date.now() - began) / 1000
      console.log(bold(`\n${title}: ${total.toFixed(0)} s`))
      for (const { name, seconds, ok } of done) console.log(`  ${ok ? '✓' : '✗'} ${name.padEnd(52)} ${seconds.toFixed(1).padStart(6)} s`)
    },
  }
}

/** `pnpm install --frozen-lockfile`: quick when nothing changed (~2 s), ~1.5 min on a fresh clone. */
export function install() {
  const fresh = !existsSync(join(ROOT, 'node_modules/.modules.yaml'))
  if (fresh) console.log('  first install: ~1.5 min here (better-sqlite3 compiles from source when no prebuilt binary is reachable)')
  const [command, prefix] = pnpmCommand()
  return run(command, [...prefix, 'install', '--frozen-lockfile', '--reporter=append-only'], {
    quiet: true,
    label: 'installing',
    env: { npm_config_update_notifier: 'false' },
  })
}

function listFiles(dir) {
  if (!existsSync(dir)) return []
  const out = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...listFiles(path))
    else out.push(path)
  }
  return out.sort()
}

/** A hash of what a package's build reads: its sources, config and package.json. */
function sourceHash(pkgDir) {
  const hash = createHash('sha256')
  const files = [
    ...listFiles(join(pkgDir, 'src')),
    ...listFiles(join(pkgDir, 'scripts')),
    ...['package.json', 'tsup.config.ts', 'tsconfig.json'].map((f) => join(pkgDir, f)),
  ]
  for (const file of files) {
    if (!existsSync(file)) continue
    hash.update(relative(pkgDir, file)).update('\0').update(readFileSync(file)).update('\0')
  }
  hash.update(readFileSync(join(ROOT, 'tsconfig.base.json')))
  return hash.digest('hex')
}

/** Packages whose sources changed since their last build here (or that were never built). */
export function stalePackages() {
  const stale = []
  let upstreamChanged = false
  for (const name of PACKAGES) {
    const dir = join(ROOT, 'packages', name)
    if (!existsSync(join(dir, 'package.json'))) continue
    const stamp = join(BUILD_STAMPS, `${name}.sha256`)
    const current = sourceHash(dir)
    const built = existsSync(stamp) && existsSync(join(dir, 'dist')) ? readFileSync(stamp, 'utf8') : ''
    // The adapters bundle core's types: rebuild them when core changes.
    if (built !== current || (upstreamChanged && name !== 'core')) {
      stale.push({ name, dir, stamp, hash: current })
      if (name === 'core') upstreamChanged = true
    }
  }
  return stale
}

/** Builds the packages whose sources changed; nothing when all are up to date. */
export async function buildIfStale() {
  const stale = stalePackages()
  if (stale.length === 0) {
    console.log('  packages up to date: nothing to build')
    return 0
  }
  const [command, prefix] = pnpmCommand()
  const filters = stale.flatMap(({ dir }) => ['--filter', `./${relative(ROOT, dir)}`])
  const code = await run(command, [...prefix, ...filters, '-r', 'build'], { quiet: true, label: 'building' })
  if (code !== 0) return code
  mkdirSync(BUILD_STAMPS, { recursive: true })
  for (const { stamp, hash } of stale) writeFileSync(stamp, hash)
  console.log(`  built ${stale.map((s) => s.name).join(', ')}`)
  return 0
}
