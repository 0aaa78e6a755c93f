/**
 * The site's reference pages (docs/reference/options.md, errors.md, cli.md) are generated from the
 * code: the options' declarations and JSDoc, the error codes' status tables and JSDoc, the CLI's own
 * `--help` (scripts/docs-reference.mjs). The committed pages must be what the code generates now, so
 * a page cannot disagree with the code; a failure names the page, the first line that differs and
 * `npm run docs:reference`. Copies of the sources with an option added, a status changed, and a
 * page edited by hand prove that each is caught.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  checkReference,
  cliPage,
  describeReferenceDifferences,
  errorsPage,
  generateReference,
  optionsPage,
  UPDATE_REFERENCE,
} from '../../scripts/docs-reference.mjs'
import { ROOT } from '../../scripts/docs-site.mjs'

/** A copy of every package's sources and of the committed reference pages, in a temporary root. */
function copyOfSources(): string {
  const root = mkdtempSync(join(tmpdir(), 'docs-reference-'))
  for (const pkg of ['core', 'cloudflare', 'fastify', 'lambda', 'bullmq', 'pg-boss', 'cli']) {
    cpSync(join(ROOT, 'packages', pkg, 'src'), join(root, 'packages', pkg, 'src'), { recursive: true })
  }
  cpSync(join(ROOT, 'docs/reference'), join(root, 'docs/reference'), { recursive: true })
  return root
}
const copies: string[] = []
afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true })
})
function edit(root: string, file: string, from: string, to: string): void {
  const text = readFileSync(join(root, file), 'utf8')
  expect(text, `${file} contains ${from}`).toContain(from)
  writeFileSync(join(root, file), text.replace(from, to))
}

describe('the reference pages', () => {
  it(`match the code (after a change to an option, an error code or a command: ${UPDATE_REFERENCE})`, async () => {
    const differences = await checkReference()
    expect(differences, describeReferenceDifferences(differences)).toEqual([])
  })

  it('list every option with its default, every error code with its status, and every command with its help', async () => {
    const [options = '', errors = '', cli = ''] = (await generateReference()).map((page) => page.text)
    expect(options).toContain('| `leaseMs` | `number` | `30000` | How long a claim holds')
    expect(options).toContain('### `SqliteDedupStoreOptions`')
    expect(options).toMatch(/\| `secret` \(required\) \| `WebhookSecret` \|/)
    expect(errors).toMatch(/\| `signature_mismatch` \| 401 \| `WebhookVerificationError` \| Wrong secret/)
    expect(errors).toMatch(/\| `in_flight` \| 409 \| `WebhookHandlingError` \|/)
    expect(errors).toContain('| 200 | `{"ok":true,"duplicate":true}` |')
    expect(errors).toMatch(/\| `throttled` \| The database refused the call/)
    for (const command of [
      'email-webhooks send',
      'email-webhooks endpoint recover',
      'email-webhooks emails reconcile',
      'email-webhooks inbox work',
    ])
      expect(cli).toContain(`## \`${command}\`\n\n\`\`\`text\nUsage: ${command} `)
    expect(cli).toMatch(/\| 130 \| `interrupted` \|/)
    // No option or code is left without its explanation.
    expect(options.split('\n').filter((line) => line.startsWith('| `') && line.endsWith('| — |'))).toEqual([])
    expect(errors.split('\n').filter((line) => line.startsWith('| `') && line.endsWith('| — |'))).toEqual([])
  })

  it('fail on an option added to the code without its page, naming the page and the command that updates it', async () => {
    const root = copyOfSources()
    copies.push(root)
    edit(
      root,
      'packages/core/src/receiver/types.ts',
      '  /** Runs for every verified event (known or unknown) before its typed handler. */\n',
      '  /** Runs for every verified event (known or unknown) before its typed handler. */\n  onSomething?: () => void\n',
    )
    const differences = await checkReference({ root, pages: [{ file: 'docs/reference/options.md', text: optionsPage(root) }] })
    expect(differences).toEqual([
      expect.objectContaining({ file: 'docs/reference/options.md', fresh: expect.stringContaining('`onSomething`') }),
    ])
    expect(describeReferenceDifferences(differences)).toMatch(/disagree with the code; run `npm run docs:reference`[\s\S]*options\.md:\d+/)
  })

  it('fail on an error code whose status changed in the code', async () => {
    const root = copyOfSources()
    copies.push(root)
    edit(root, 'packages/core/src/errors.ts', '  missing_header: 401,', '  missing_header: 400,')
    const differences = await checkReference({ root, pages: [{ file: 'docs/reference/errors.md', text: errorsPage(root) }] })
    expect(differences).toEqual([
      expect.objectContaining({
        file: 'docs/reference/errors.md',
        committed: expect.stringMatching(/^\| `missing_header` \| 401 /),
        fresh: expect.stringMatching(/^\| `missing_header` \| 400 /),
      }),
    ])
  })

  it('fail on a page edited by hand, and on a page that is missing', async () => {
    const root = copyOfSources()
    copies.push(root)
    edit(root, 'docs/reference/cli.md', '| 3 | `unreachable` |', '| 4 | `unreachable` |')
    rmSync(join(root, 'docs/reference/options.md'))
    const pages = [
      { file: 'docs/reference/cli.md', text: await cliPage() },
      { file: 'docs/reference/options.md', text: optionsPage() },
    ]
    const differences = await checkReference({ root, pages })
    expect(differences.map((d) => [d.file, d.committed])).toEqual([
      ['docs/reference/cli.md', expect.stringMatching(/^\| 4 \| `unreachable` \|/)],
      ['docs/reference/options.md', undefined],
    ])
    expect(describeReferenceDifferences(differences)).toContain('committed: (missing)')
  })
})
