/**
 * Entry point for a non-Node runtime: `bun run-neutral.ts` or `deno run … run-neutral.ts`.
 * Runs, inside that runtime, the behaviour subset (suite.ts) over the runtime's own HTTP
 * server, the 16 HMAC vectors (test/core/vectors.ts), the default-store choice and the
 * dedup-store conformance suite, then prints one line `RESULT <json>` for runtimes.test.ts.
 */
import { createReceiver, cryptoBackendName, MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, dedupStoreConformance, TEST_SECRET } from '@email-webhooks/core/testing'
import { type CaseResult, CompareAndSetStore, runNeutralSuite, type Serve } from './suite.ts'
import { vectorResults } from './vectors-check.ts'

declare const Bun: {
  version: string
  serve(options: { port: number; hostname: string; fetch: (request: Request) => Response | Promise<Response> }): {
    port: number
    stop(force?: boolean): Promise<void>
  }
}
declare const Deno: {
  version: { deno: string }
  serve(
    options: { port: number; hostname: string; onListen?: () => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { addr: { port: number }; shutdown(): Promise<void> }
}

const runtime = typeof Bun !== 'undefined' ? 'Bun' : typeof Deno !== 'undefined' ? 'Deno' : 'unknown'

const serve: Serve = async (fetch) => {
  if (runtime === 'Bun') {
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch })
    return { url: `http://127.0.0.1:${server.port}`, close: () => server.stop(true) }
  }
  if (runtime === 'Deno') {
    const server = Deno.serve({ port: 0, hostname: '127.0.0.1', onListen() {} }, fetch)
    return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() }
  }
  throw new Error('run-neutral.ts runs under Bun or Deno')
}

/** Two receivers without a `store` option: the runtime's default store, and how often it warns. */
async function defaultStore() {
  const warnings: string[] = []
  const warn = console.warn
  console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(' '))
  try {
    let handled = 0
    const handlers = { 'email.bounced': () => void handled++ }
    const first = createReceiver({ secret: TEST_SECRET, handlers })
    const second = createReceiver({ secret: TEST_SECRET, handlers })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const answers = []
    for (const receiver of [first, second, first]) answers.push((await receiver.receive(delivery)).body)
    return { answers, handled, warnings }
  } finally {
    console.warn = warn
  }
}

/** The conformance suite of @email-webhooks/core/testing, with a minimal describe/it. */
async function conformance(): Promise<CaseResult[]> {
  const tests: { name: string; fn: () => Promise<void> }[] = []
  const prefix: string[] = []
  const runner = {
    describe(name: string, fn: () => void) {
      prefix.push(name)
      fn()
      prefix.pop()
    },
    it(name: string, fn: () => Promise<void>) {
      tests.push({ name: [...prefix, name].join(' > '), fn })
    },
  }
  dedupStoreConformance('MemoryDedupStore', runner, { createStore: () => new MemoryDedupStore() })
  dedupStoreConformance('custom CompareAndSetStore', runner, { createStore: () => new CompareAndSetStore() })
  const results: CaseResult[] = []
  for (const test of tests) {
    const started = Date.now()
    try {
      await test.fn()
      results.push({ name: test.name, ok: true, ms: Date.now() - started })
    } catch (error) {
      results.push({ name: test.name, ok: false, error: String(error), ms: Date.now() - started })
    }
  }
  return results
}

const started = Date.now()
const result = {
  runtime,
  version: runtime === 'Bun' ? Bun.version : runtime === 'Deno' ? Deno.version.deno : '',
  backend: cryptoBackendName(),
  cases: await runNeutralSuite(serve, runtime),
  vectors: await vectorResults(),
  defaultStore: await defaultStore(),
  conformance: await conformance(),
  ms: 0,
}
result.ms = Date.now() - started
console.log(`RESULT ${JSON.stringify(result)}`)
