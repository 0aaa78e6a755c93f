// `npm run docs`: builds the documentation site from the Markdown pages of docs/ and serves it on
// 127.0.0.1 until Ctrl-C.
//
//   npm run docs                     install, check every link and the generated reference pages,
//                                    build the site, serve it on http://127.0.0.1:4173/
//   npm run docs -- --port 5000      another port (0: any free one)
//   npm run docs -- --no-serve       build only (docs/.vitepress/dist): what the deploy workflow runs
//
// The reference pages (options, answers and error codes, the CLI's commands) are generated from the
// code: when the code changed, `npm run docs:reference` rewrites them (commit them).

import { checkReference, describeReferenceDifferences } from './docs-reference.mjs'
import { buildSite, SITE_DIST, serveSite } from './docs-serve.mjs'
import { checkLinks, siteVersion } from './docs-site.mjs'
import { buildIfStale, createSteps, install } from './workspace.mjs'

const args = process.argv.slice(2)
const serve = !args.includes('--no-serve')
const portAt = args.indexOf('--port')
const port = portAt >= 0 ? Number(args[portAt + 1]) : 4173
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`npm run docs: --port takes a port number (0 for any free one), not ${args[portAt + 1]}.`)
  process.exit(2)
}

const steps = createSteps('npm run docs')
await steps.step('install dependencies (pnpm, from the lockfile)', install)
// The CLI's pages are its own --help: the check reads the built CLI.
await steps.step('build packages whose sources changed', buildIfStale)
await steps.step('check every link and anchor of the pages', () => {
  const problems = checkLinks()
  for (const problem of problems) console.error(`  ${problem}`)
  return problems.length === 0 ? 0 : 1
})
await steps.step('check the reference pages against the code', async () => {
  const differences = await checkReference()
  if (differences.length > 0) console.error(describeReferenceDifferences(differences))
  return differences.length === 0 ? 0 : 1
})
await steps.step(`build the site (VitePress), version ${siteVersion()}`, async () => {
  const { code, output } = await buildSite({ quiet: true })
  if (code !== 0) process.stdout.write(output.slice(-8000))
  return code
})
steps.summary()

if (serve) {
  const site = await serveSite(SITE_DIST, { port })
  console.log(`\nThe site is served on ${site.url} (Ctrl-C stops).`)
  const stop = async () => {
    await site.close()
    process.exit(0)
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
