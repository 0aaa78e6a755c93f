// `npm run pack [-- --out DIR]`: installable tarballs of every package, in one folder (default
// ./packs), to try the packages in an app outside this repository. pnpm writes each tarball with
// `workspace:` versions replaced by the real ones (plain `npm pack` keeps `workspace:^`, which npm
// cannot install: EUNSUPPORTEDPROTOCOL). Prints the one `npm install` line that installs them.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { buildIfStale, createSteps, install, pnpmCommand, ROOT, run } from './workspace.mjs'

const args = process.argv.slice(2)
const outIndex = args.indexOf('--out')
const out = resolve(outIndex >= 0 && args[outIndex + 1] ? args[outIndex + 1] : join(ROOT, 'packs'))
const packages = readdirSync(join(ROOT, 'packages'))
  .filter((name) => existsSync(join(ROOT, 'packages', name, 'package.json')))
  .map((name) => ({
    dir: join(ROOT, 'packages', name),
    manifest: JSON.parse(readFileSync(join(ROOT, 'packages', name, 'package.json'), 'utf8')),
  }))
  .filter(({ manifest }) => !manifest.private)

const steps = createSteps('npm run pack')
await steps.step('install dependencies (pnpm, from the lockfile)', install)
await steps.step('build packages whose sources changed', buildIfStale)
const tarballs = []
await steps.step(`pack ${packages.length} packages into ${relative(process.cwd(), out) || '.'}`, async () => {
  mkdirSync(out, { recursive: true })
  const [command, prefix] = pnpmCommand()
  for (const { dir, manifest } of packages) {
    const code = await run(command, [...prefix, 'pack', '--pack-destination', out], {
      cwd: dir,
      quiet: true,
      label: `packing ${manifest.name}`,
    })
    if (code !== 0) return code
    tarballs.push({ name: manifest.name, file: join(out, `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`) })
  }
  const missing = tarballs.filter(({ file }) => !existsSync(file))
  if (missing.length > 0) {
    console.error(`  pnpm pack did not write ${missing.map(({ file }) => file).join(', ')}`)
    return 1
  }
  return 0
})
steps.summary()
const core = tarballs.find(({ name }) => name === '@email-webhooks/core')
console.log(`\nTarballs (workspace: versions replaced):\n${tarballs.map(({ file }) => `  ${file}`).join('\n')}`)
console.log(
  `\nIn your app, install core's tarball with the adapter you use, in one command (the adapter's dependency on @email-webhooks/core is then the tarball, not the registry):\n  npm install ${core?.file} ${tarballs.find(({ name }) => name === '@email-webhooks/express')?.file}`,
)
