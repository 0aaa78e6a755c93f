// `npm run pack [-- --out DIR]`: installable tarballs of every package, in one folder (default
// ./packs), to try the packages in an app outside this repository. pnpm writes each tarball with
// `workspace:` versions replaced by the real ones (plain `npm pack` keeps `workspace:^`, which npm
// cannot install: EUNSUPPORTEDPROTOCOL). Prints which tarball is which package (the CLI's is the
// unscoped email-webhooks-<version>.tgz), the `npm install` line for core and an adapter, and the
// `npm i -D` line for the CLI, to be run with `npx --no-install` (the packages are not on the npm
// registry yet: a bare `npx email-webhooks` would look the name up there).
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
const byName = (name) => tarballs.find((tarball) => tarball.name === name)?.file
/** The CLI: the one package with a bin (`email-webhooks`, unscoped). */
const cli = packages.find(({ manifest }) => manifest.bin !== undefined)?.manifest.name
// The CLI last, apart from the libraries.
tarballs.sort((a, b) => Number(a.name === cli) - Number(b.name === cli))
const labelOf = (name) => (name === cli ? `${name} (the CLI, a dev dependency)` : name)
const width = Math.max(...tarballs.map(({ name }) => labelOf(name).length))
console.log(
  `\nTarballs (workspace: versions replaced):\n${tarballs.map(({ name, file }) => `  ${labelOf(name).padEnd(width)}  ${file}`).join('\n')}`,
)
console.log(
  `\nIn your app, install core's tarball with the adapter you use, in one command (the adapter's dependency on @email-webhooks/core is then the tarball, not the registry):\n  npm install ${byName('@email-webhooks/core')} ${byName('@email-webhooks/express')}`,
)
if (cli !== undefined) {
  console.log(
    `\nThen the CLI as a dev dependency, and run it with npx --no-install (these packages are not on the npm registry yet: without --no-install, a missing local install makes npx fetch whatever the registry holds under the name ${cli}, and run it with your secret in its environment):\n  npm i -D ${byName(cli)}\n  npx --no-install ${cli} send http://localhost:3000/hooks`,
  )
  console.log(
    `\nIf npx --no-install ${cli} … answers "npm error 404 Not Found - GET https://registry.npmjs.org/${cli}", the CLI is not installed in that folder (npx then asks the registry, where it is not published yet): run the npm i -D line above there. The tarball's path is absolute, so the line works from any folder.`,
  )
}
