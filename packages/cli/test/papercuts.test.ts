/**
 * Small mistakes a new user makes, each answered with what to do: a subcommand typed without its
 * group (`recover` is `endpoint recover`), an API URL without `/v1` (the corrected URL, and no
 * word about the key), a zero duration (it must be positive), an inbox id given by its start (the
 * unique entry, or the ones it could be), and an empty body to sign (a warning).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, SECRET } from './helpers/cli.js'

let dir: string
let db: string
const IDS = ['abcd1111-0000-4000-8000-000000000001', 'abcd2222-0000-4000-8000-000000000002', 'ef012345-0000-4000-8000-000000000003']
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-papercuts-'))
  db = join(dir, 'dedup.db')
  const store = new SqliteDedupStore({ path: db })
  for (const id of IDS) {
    await store.inbox?.enqueue(
      { key: `default:${id}`, type: 'email.bounced', payload: JSON.stringify({ id }), timestamp: 1 },
      { retentionMs: 60_000 },
    )
  }
  await store.close()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

describe.concurrent('what a new user trips on', () => {
  it.each([
    ['recover', 'email-webhooks endpoint recover'],
    ['reconcile', 'email-webhooks emails reconcile'],
    ['retry', 'email-webhooks inbox retry'],
    ['list', 'email-webhooks endpoint list or email-webhooks inbox list'],
  ])('suggests the full command for a subcommand typed without its group: %s', async (typed, full) => {
    const result = await runCli([typed, 'x'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`error: unknown command '${typed}'\n(Did you mean ${full}?)`)
  })

  it('keeps commander’s own suggestion for a mistyped top-level command', async () => {
    const result = await runCli(['sned'])
    expect(result.stderr).toContain("error: unknown command 'sned'\n(Did you mean send?)")
  })

  it('answers an API URL without /v1 with the corrected URL, naming where it came from and not the key', async () => {
    const fromEnv = await runCli(['endpoint', 'list'], { env: { EMAIL_API_KEY: 'ek_test_key', EMAIL_API_URL: 'http://127.0.0.1:4000' } })
    expect(fromEnv.code).toBe(2)
    expect(fromEnv.stderr).toBe(
      "email-webhooks: EMAIL_API_URL must be the API's base URL, whose path ends in /v1: did you mean http://127.0.0.1:4000/v1? (got http://127.0.0.1:4000)\n",
    )
    const fromOption = await runCli(
      ['emails', 'reconcile', 'http://127.0.0.1:3000/hooks', '--ids', '-', '--api-url', 'https://api.example.com/'],
      {
        env: { EMAIL_API_KEY: 'ek_test_key', EMAIL_WEBHOOK_SECRET: SECRET },
        input: `${IDS[0]}\n`,
      },
    )
    expect(fromOption.code).toBe(2)
    expect(fromOption.stderr).toContain(
      "--api-url must be the API's base URL, whose path ends in /v1: did you mean https://api.example.com/v1?",
    )
    for (const result of [fromEnv, fromOption]) expect(result.stderr).not.toMatch(/key from|ek_test_key/)
  })

  it('says a duration must be positive: inbox purge --older-than 0s', async () => {
    const result = await runCli(['inbox', 'purge', '--dead', '--older-than', '0s', '--store', db])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("argument '0s' is invalid. Give a positive duration (more than 0), such as 7d, 36h, 90m or 30s.")
  })

  it('shows an inbox entry from the start of its id when no other id starts so, and names the candidates otherwise', async () => {
    const unique = await runCli(['inbox', 'show', 'ef01', '--store', db, '--json'])
    expect(unique.code, unique.stderr).toBe(0)
    expect(JSON.parse(unique.stdout)).toMatchObject({ id: IDS[2], state: 'pending' })
    const longer = await runCli(['inbox', 'show', 'abcd2', '--store', db, '--json'])
    expect(JSON.parse(longer.stdout)).toMatchObject({ id: IDS[1] })
    const ambiguous = await runCli(['inbox', 'show', 'abcd', '--store', db])
    expect(ambiguous.code).toBe(2)
    expect(ambiguous.stderr).toContain(`abcd is the start of 2 entries' ids (${IDS[0]}, ${IDS[1]}): give more of it, or the whole id.`)
    const none = await runCli(['inbox', 'show', 'ffff', '--store', db])
    expect(none.code).toBe(1)
    expect(none.stderr).toContain('no inbox entry ffff')
  })

  it('warns when the body to sign is empty, and signs it all the same', async () => {
    const empty = join(dir, 'empty.json')
    await writeFile(empty, '')
    const fromFile = await runCli(['sign', empty], { env: { EMAIL_WEBHOOK_SECRET: SECRET } })
    expect(fromFile.code).toBe(0)
    expect(fromFile.stderr).toContain(`warning: the body is empty (${empty} has 0 bytes)`)
    expect(fromFile.stdout).toMatch(/^webhook-signature: [0-9a-f]{64}$/m)
    const fromStdin = await runCli(['sign'], { env: { EMAIL_WEBHOOK_SECRET: SECRET }, input: '' })
    expect(fromStdin.stderr).toContain('warning: the body is empty (nothing came on stdin)')
    const notEmpty = await runCli(['sign'], { env: { EMAIL_WEBHOOK_SECRET: SECRET }, input: '{"id":"e1"}' })
    expect(notEmpty.stderr).not.toContain('empty')
  })
})
