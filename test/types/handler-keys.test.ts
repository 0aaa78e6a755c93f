/**
 * A misspelt handler key fails to compile with the "did you mean" the runtime gives, at every entry
 * point that takes a handler map (core's createReceiver and fetch handler, the Express, Hono, Koa
 * and Lambda adapters): the compiler's message names the key and the type it likely meant. Checked
 * with the TypeScript compiler on snippets, under the workspace's strict settings.
 */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
/** Beside test/node_modules, so that the workspace packages resolve. */
const DIR = join(ROOT, 'test/types/.handler-keys')

/** The diagnostics of each snippet, compiled in one program. */
function diagnostics(snippets: string[]): string[][] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'test/tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  )
  if (!config) throw new Error('cannot read test/tsconfig.json')
  const files = new Map(snippets.map((code, i) => [join(DIR, `snippet-${i}.ts`), code]))
  const host = ts.createCompilerHost({ ...config.options, noEmit: true })
  const { fileExists, readFile, getSourceFile } = host
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name)
  host.readFile = (name) => files.get(name) ?? readFile.call(host, name)
  host.getSourceFile = (name, language, onError, create) => {
    const text = files.get(name)
    return text === undefined ? getSourceFile.call(host, name, language, onError, create) : ts.createSourceFile(name, text, language)
  }
  const program = ts.createProgram([...files.keys()], { ...config.options, noEmit: true }, host)
  return [...files.keys()].map((name) =>
    ts.getPreEmitDiagnostics(program, program.getSourceFile(name)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')),
  )
}

const ENTRY_POINTS: Record<string, (handlers: string) => string> = {
  createReceiver: (h) =>
    `import { createReceiver } from '@email-webhooks/core'\ncreateReceiver({ secret: 's', store: 'memory', handlers: ${h} })`,
  'core emailWebhook': (h) => `import { emailWebhook } from '@email-webhooks/core'\nemailWebhook('s', ${h})`,
  express: (h) => `import { emailWebhook } from '@email-webhooks/express'\nemailWebhook('s', ${h})`,
  hono: (h) => `import { emailWebhook } from '@email-webhooks/hono'\nemailWebhook('s', ${h})`,
  koa: (h) => `import { emailWebhook } from '@email-webhooks/koa'\nemailWebhook('s', ${h})`,
  lambda: (h) => `import { emailWebhook } from '@email-webhooks/lambda'\nemailWebhook('s', ${h}, { store: 'memory' })`,
}

describe('a misspelt handler key', () => {
  it('fails to compile with the type it likely meant, at every entry point; right keys keep their typed events', () => {
    const names = Object.keys(ENTRY_POINTS)
    const wrong = names.map(
      (name) => ENTRY_POINTS[name]?.("{ 'email.bounce': async () => {}, 'email.queued': async (e) => void e.data.id }") ?? '',
    )
    const right = names.map(
      (name) => ENTRY_POINTS[name]?.("{ 'email.bounced': async (event) => { const type: 'email.bounced' = event.type; void type } }") ?? '',
    )
    const results = diagnostics([...wrong, ...right])
    for (const [i, name] of names.entries()) {
      expect([name, results[i]]).toEqual([
        name,
        [expect.stringContaining(`"'email.bounce' is not an email event type. Did you mean 'email.bounced'?"`)],
      ])
      expect([name, results[names.length + i]]).toEqual([name, []])
    }
  }, 120_000)

  it('suggests from the longest shared start, a missing email. prefix or the case, and says when nothing is near', () => {
    const cases: Array<[string, string]> = [
      ['email.recipient_acepted', "Did you mean 'email.recipient_accepted'?"],
      ['email.bouncd', "Did you mean 'email.bounced'?"],
      ['bounced', "Did you mean 'email.bounced'?"],
      ['Email.Complained', "Did you mean 'email.complained'?"],
      ['email_submitted', "Did you mean 'email.submitted'?"],
      ['email.opened', 'is not an email event type: use one of EMAIL_EVENT_TYPES, or onUnknown for other types'],
    ]
    const results = diagnostics(cases.map(([key]) => ENTRY_POINTS.express?.(`{ '${key}': () => {} }`) ?? ''))
    for (const [i, [key, says]] of cases.entries()) {
      const message = results[i]?.join('\n') ?? ''
      expect([key, message]).toEqual([key, expect.stringContaining(`'${key}' is not an email event type`)])
      expect([key, message]).toEqual([key, expect.stringContaining(says)])
    }
  }, 120_000)

  it('still accepts a map typed EmailEventHandlers or built elsewhere', () => {
    const [shared] = diagnostics([
      [
        "import type { EmailEventHandlers } from '@email-webhooks/core'",
        "import { emailWebhook } from '@email-webhooks/express'",
        "const handlers: EmailEventHandlers = { 'email.bounced': () => {} }",
        "emailWebhook('s', handlers)",
        "emailWebhook('s')",
        "emailWebhook('s', {})",
      ].join('\n'),
    ])
    expect(shared).toEqual([])
  }, 120_000)
})
