// `email-webhooks send` against the real example servers (Express and Hono on Node), run as a process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ExampleServer, runCli, SECRET, startExample } from './helpers/cli.js'

describe.each(['express', 'hono-node'] as const)('send against the %s example', (name) => {
  let server: ExampleServer
  beforeAll(async () => {
    server = await startExample(name)
  })
  afterAll(() => server?.stop())

  const env = { EMAIL_WEBHOOK_SECRET: SECRET }

  it('answers 200 to one authentic email.bounced and exits 0', async () => {
    const result = await runCli(['send', server.url], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/✓ send\s+200 .* ms {2}email\.bounced [0-9a-f-]{36} {2}right:/)
    expect(result.stdout + result.stderr).not.toContain(SECRET)
  })
})
