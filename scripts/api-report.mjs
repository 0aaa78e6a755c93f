// The public surface of every published package, as API reports committed beside it:
// packages/<dir>/api/<dir>.api.md for its main entry and <dir>.<subpath>.api.md for each subpath
// export (core: sqlite, postgres, redis, dynamodb, deno-kv, testing, api, console). API Extractor
// reads each entry's built declarations (the `types` its package.json exports name, what users
// compile against) and writes every exported name with its full signature.
//
//   npm run api:update            build what changed, then rewrite the reports (commit them)
//   node scripts/api-report.mjs --check
//                                 compare fresh reports of the built packages with the committed
//                                 ones; exit 1 naming each difference (the test and the release)
//
// A change to a report is a change to what users import: review it as such (docs/releasing.md).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CompilerState, Extractor, ExtractorConfig } from '@microsoft/api-extractor'

const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..')
/** The command that rewrites the reports, named in every failure. */
export const UPDATE_COMMAND = 'npm run api:update'
const REPORT_SUFFIX = '.api.md'

/** Every package under packages/ that is published (not private), with its folder and manifest. */
export function publishedPackages(root = ROOT) {
  const base = join(root, 'packages')
  return readdirSync(base)
    .filter((dir) => existsSync(join(base, dir, 'package.json')))
    .map((dir) => ({ dir: join(base, dir), name: dir, manifest: JSON.parse(readFileSync(join(base, dir, 'package.json'), 'utf8')) }))
    .filter(({ manifest }) => manifest.private !== true)
}

/** The declaration file an export condition tree gives to `import` (ESM types), or undefined. */
function importTypes(target) {
  if (typeof target === 'string') return target.endsWith('.d.ts') ? target : undefined
  if (target === null || typeof target !== 'object') return undefined
  if (typeof target.types === 'string' && target.types.endsWith('.d.ts')) return target.types
  return importTypes(target.import) ?? importTypes(target.default)
}

/**
 * The entry points of a package: each export subpath with declarations (not `./package.json`,
 * not the JSON fixtures), its `.d.ts` and the report's base name.
 */
export function entryPoints(pkgDir, manifest, name) {
  const exports = manifest.exports ?? { '.': { types: manifest.types } }
  const out = []
  for (const [subpath, target] of Object.entries(exports)) {
    const dts = importTypes(target)
    if (dts === undefined || subpath.includes('*')) continue
    const suffix = subpath === '.' ? '' : `.${subpath.replace(/^\.\//, '').replaceAll('/', '.')}`
    out.push({ subpath, dts: join(pkgDir, dts), report: `${name}${suffix}` })
  }
  return out
}

/** API Extractor's settings for one entry point: the report only, every message into it, nothing on the console. */
function configFor(pkgDir, entry, outDir) {
  const none = { logLevel: 'none', addToApiReportFile: false }
  return ExtractorConfig.prepare({
    configObject: {
      projectFolder: pkgDir,
      mainEntryPointFilePath: entry.dts,
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: 'ES2022',
            module: 'ESNext',
            moduleResolution: 'Bundler',
            lib: ['ES2022', 'DOM', 'DOM.Iterable'],
            types: ['node'],
            strict: true,
            skipLibCheck: true,
          },
          files: [entry.dts],
        },
      },
      // Types an entry uses without exporting them are part of its surface too: written out in full.
      apiReport: {
        enabled: true,
        reportFileName: entry.report,
        reportFolder: outDir,
        reportTempFolder: outDir,
        includeForgottenExports: true,
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      newlineKind: 'lf',
      // No analysis warnings in the reports: they carry line numbers of the built declarations, so an
      // unrelated change would move them; the report's text is the surface and nothing else.
      messages: {
        compilerMessageReporting: { default: none },
        extractorMessageReporting: { default: none },
        tsdocMessageReporting: { default: none },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: join(pkgDir, 'package.json'),
  })
}

/**
 * Writes the reports of one package into `outDir` (one file per entry point); returns their file names.
 * @throws {Error} when an entry's declarations are missing (not built) or API Extractor fails.
 */
export function generateReports(pkg, outDir, root = ROOT) {
  const entries = entryPoints(pkg.dir, pkg.manifest, pkg.name)
  const missing = entries.filter(({ dts }) => !existsSync(dts))
  if (missing.length > 0) {
    throw new Error(
      `[api-report] ${pkg.manifest.name}: ${missing.map(({ dts }) => relative(root, dts)).join(', ')} missing: build the packages first (npm run build).`,
    )
  }
  mkdirSync(outDir, { recursive: true })
  const configs = entries.map((entry) => configFor(pkg.dir, entry, outDir))
  // One TypeScript program for every entry of the package (they share their declaration chunks).
  const compilerState = CompilerState.create(configs[0], { additionalEntryPoints: entries.map(({ dts }) => dts) })
  const files = []
  for (const [i, config] of configs.entries()) {
    const result = Extractor.invoke(config, { localBuild: true, compilerState, showVerboseMessages: false, messageCallback: quiet })
    if (!result.succeeded) throw new Error(`[api-report] API Extractor failed on ${relative(root, entries[i].dts)}.`)
    files.push(`${entries[i].report}${REPORT_SUFFIX}`)
  }
  return files
}

/** Keeps API Extractor's own console lines ("API report written…") out of the output. */
function quiet(message) {
  message.handled = true
}

/** The committed reports of a package: `packages/<dir>/api/`. */
export function reportFolder(pkg) {
  return join(pkg.dir, 'api')
}

/**
 * Compares fresh reports (in `freshDir`) with the committed ones of `pkg`.
 * @returns Each difference: `changed`, `missing` (no committed report), `stale` (a report of an entry that is gone).
 */
export function compareReports(pkg, freshDir, files, root = ROOT) {
  const committedDir = reportFolder(pkg)
  const committed = existsSync(committedDir) ? readdirSync(committedDir).filter((f) => f.endsWith(REPORT_SUFFIX)) : []
  const differences = []
  for (const file of files) {
    const path = join(committedDir, file)
    const fresh = readFileSync(join(freshDir, file), 'utf8')
    if (!existsSync(path)) differences.push({ kind: 'missing', file: relative(root, path) })
    else if (readFileSync(path, 'utf8') !== fresh) {
      differences.push({ kind: 'changed', file: relative(root, path), diff: lineDiff(readFileSync(path, 'utf8'), fresh) })
    }
  }
  for (const file of committed)
    if (!files.includes(file)) differences.push({ kind: 'stale', file: relative(root, join(committedDir, file)) })
  return differences
}

/** The lines only in one of two texts, `-` committed and `+` fresh (at most 40): enough to see what moved. */
function lineDiff(before, after) {
  const a = new Set(before.split('\n'))
  const b = new Set(after.split('\n'))
  const lines = [
    ...before
      .split('\n')
      .filter((line) => !b.has(line))
      .map((line) => `- ${line}`),
    ...after
      .split('\n')
      .filter((line) => !a.has(line))
      .map((line) => `+ ${line}`),
  ]
  return lines.length > 40 ? [...lines.slice(0, 40), `… ${lines.length - 40} more lines`] : lines
}

/**
 * Checks (or with `update`, rewrites) the reports of every published package.
 * @returns The differences found (empty when the reports match, and always after an update).
 */
export function checkReports({ update = false, root = ROOT, packages = publishedPackages(root) } = {}) {
  const scratch = mkdtempSync(join(tmpdir(), 'email-webhooks-api-'))
  try {
    const differences = []
    for (const pkg of packages) {
      const fresh = join(scratch, pkg.name)
      const files = generateReports(pkg, fresh, root)
      const found = compareReports(pkg, fresh, files, root)
      if (update && found.length > 0) {
        const target = reportFolder(pkg)
        mkdirSync(target, { recursive: true })
        for (const file of readdirSync(target)) if (file.endsWith(REPORT_SUFFIX) && !files.includes(file)) rmSync(join(target, file))
        for (const file of files) writeFileSync(join(target, file), readFileSync(join(fresh, file), 'utf8'))
      }
      if (!update) differences.push(...found)
      else for (const d of found) console.log(`  ${d.kind === 'stale' ? 'removed' : 'wrote'} ${d.file}`)
    }
    return differences
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/** The failure message for `differences`: what changed, and the command that accepts it. */
export function describeDifferences(differences) {
  const lines = differences.flatMap(({ kind, file, diff }) => [
    `  ${kind === 'changed' ? 'changed' : kind === 'missing' ? 'no committed report' : 'report of an entry point that is gone'}: ${file}`,
    ...(diff ?? []).map((line) => `      ${line}`),
  ])
  return [
    'The public API differs from the committed API reports:',
    ...lines,
    `If the change is intended, run \`${UPDATE_COMMAND}\` and commit packages/*/api/ with a change note (a removed or changed line is a breaking change: docs/releasing.md).`,
  ].join('\n')
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const update = process.argv.includes('--update')
  if (update) {
    // The reports are read from the built declarations: build what changed first.
    const { buildIfStale } = await import('./workspace.mjs')
    const code = await buildIfStale()
    if (code !== 0) process.exit(code)
  }
  const started = performance.now()
  const differences = checkReports({ update })
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  if (update) console.log(`API reports up to date (${seconds} s).`)
  else if (differences.length > 0) {
    console.error(describeDifferences(differences))
    process.exit(1)
  } else console.log(`API reports match the built packages (${seconds} s).`)
}
