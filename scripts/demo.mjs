// `npm run demo`: installs the workspace (only what the demo needs to run is built), then runs
// examples/express/src/demo.js, which prints what the receiver answered to each delivery.
import { buildIfStale, createSteps, install, run } from './workspace.mjs'

const steps = createSteps('npm run demo')
await steps.step('install dependencies (pnpm, from the lockfile)', install)
await steps.step('build packages whose sources changed', buildIfStale)
const code = await run(process.execPath, ['examples/express/src/demo.js'])
if (code !== 0) process.exit(code)
