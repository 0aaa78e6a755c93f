/**
 * `deno check` of the built packages: Deno resolves the declaration files' imports itself (it
 * does not map `./chunk.js` to `./chunk.d.ts` as TypeScript does), so the .d.ts bundles must hold
 * up on their own. test/runtimes/deno-check/entries.ts imports every public entry point; deno-kv.ts
 * checks that a real `Deno.Kv` fits DenoKvDedupStore.
 */
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { RUNTIMES_DIR, runToEnd, runtimeBin } from './runtimes.js'

const DENO = await runtimeBin('deno')

it('type-checks every public entry point of core, express and hono under deno check', async () => {
  const run = await runToEnd(DENO, ['check', '--quiet', join('deno-check', 'entries.ts'), join('deno-check', 'deno-kv.ts')], {
    cwd: RUNTIMES_DIR,
    env: { ...process.env, NO_COLOR: '1' },
    timeoutMs: 120_000,
  })
  expect({ code: run.code, output: `${run.stdout}${run.stderr}`.slice(-3000) }).toEqual({ code: 0, output: '' })
}, 130_000)
