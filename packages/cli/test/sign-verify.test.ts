// `email-webhooks sign` (headers and a curl line that the Express example accepts) and `verify`
// (core's verifier: valid, and each failure with its code, message and hint); --help everywhere.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ExampleServer, runCli, SECRET, startExample } from './helpers/cli.js'

const env = { EMAIL_WEBHOOK_SECRET: SECRET }

describe('sign and verify', () => {
  let server: ExampleServer
  let dir: string
  let bodyFile: string
  let id: string
  beforeAll(async () => {
    server = await startExample('express')
    dir = await mkdtemp(join(tmpdir(), 'cli-sign-'))
    id = crypto.randomUUID()
    bodyFile = join(dir, 'event.json')
    await writeFile(bodyFile, JSON.stringify({ id, type: 'email.bounced', created_at: new Date().toISOString(), data: { id: 'e-1' } }))
  })
  afterAll(async () => {
    await server?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  async function signedHeaders(extra: string[] = []): Promise<Record<string, string>> {
    const result = await runCli(['sign', bodyFile, '--json', ...extra], { env })
    expect(result.code).toBe(0)
    return JSON.parse(result.stdout).headers
  }

  describe.concurrent('cases', () => {
    it('sign prints the three headers and a curl line; the example accepts a request made from them', async () => {
      const text = await runCli(['sign', bodyFile, '--url', server.url], { env })
      expect(text.code).toBe(0)
      expect(text.stdout).toMatch(new RegExp(`^webhook-id: ${id}\nwebhook-timestamp: \\d{10}\nwebhook-signature: [0-9a-f]{64}\n`))
      expect(text.stdout).toContain(`curl -X POST '${server.url}'`)
      expect(text.stdout).toContain(`--data-binary '@${bodyFile}'`)
      const headers = await signedHeaders()
      expect(headers['webhook-id']).toBe(id)
      const { readFile } = await import('node:fs/promises')
      const response = await fetch(server.url, { method: 'POST', headers, body: await readFile(bodyFile) })
      expect(response.status).toBe(200)
    })

    it('verify says valid for a signed request (headers file of "Name: value" lines), exit 0', async () => {
      const headers = await signedHeaders()
      const file = join(dir, 'valid-headers.txt')
      await writeFile(
        file,
        `POST /hooks HTTP/1.1\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n`,
      )
      const result = await runCli(['verify', bodyFile, '--headers', file], { env })
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(new RegExp(`^✓ valid: email.bounced webhook-id ${id}, signed at `))
    })

    it('verify names signature_mismatch and finds the extra final newline', async () => {
      const headers = await signedHeaders()
      const file = join(dir, 'with-newline.json')
      const { readFile } = await import('node:fs/promises')
      await writeFile(file, `${await readFile(bodyFile, 'utf8')}\n`)
      const args = ['verify', file, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), '--json']
      const result = await runCli(args, { env })
      expect(result.code).toBe(1)
      expect(JSON.parse(result.stdout)).toEqual({
        valid: false,
        code: 'signature_mismatch',
        status: 401,
        message: expect.stringContaining('The signature does not match'),
        hints: [expect.stringContaining('without its final newline')],
      })
    })

    // What the sender signed, and what the app captured after something re-encoded it on the way.
    const event = {
      id: 'evt-reencoded',
      type: 'email.bounced',
      created_at: '2026-01-01T00:00:00Z',
      data: { id: 'e-1', note: 'héllo wörld' },
    }
    const escaped = (text: string) => text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    const compact = JSON.stringify(event)
    const pretty = JSON.stringify(event, null, 2)
    it.each([
      ['compact JSON (JSON.stringify of the parsed body)', compact, pretty],
      ['pretty-printed JSON (2 spaces)', pretty, compact],
      ['non-ASCII characters as \\uXXXX escapes', escaped(compact), compact],
      ['\\uXXXX escapes decoded', escaped(compact), compact],
      ['with a final newline', `${compact}\n`, compact],
      ['compact JSON (JSON.stringify of the parsed body), non-ASCII characters as \\uXXXX escapes', escaped(compact), `${pretty}\n`],
    ])('verify names the re-encoding whose bytes the signature matches: %s', async (name, sent, captured) => {
      // "escapes decoded" is the reverse case: the sender sent the characters, the capture has escapes.
      const [signed, received] = name === '\\uXXXX escapes decoded' ? [captured, sent] : [sent, captured]
      const sentFile = join(dir, `sent-${crypto.randomUUID()}.json`)
      const receivedFile = join(dir, `received-${crypto.randomUUID()}.json`)
      await writeFile(sentFile, signed)
      await writeFile(receivedFile, received)
      const headers = JSON.parse((await runCli(['sign', sentFile, '--json'], { env })).stdout).headers as Record<string, string>
      const args = ['verify', receivedFile, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`])]
      const json = await runCli([...args, '--json'], { env })
      expect(json.code).toBe(1)
      expect(JSON.parse(json.stdout)).toEqual({
        valid: false,
        code: 'signature_mismatch',
        status: 401,
        message: expect.stringContaining('The signature does not match'),
        reencoding: name,
        hints: [expect.stringContaining(`re-encoded as: ${name}. Something between the sender and your app re-encodes the body`)],
      })
      const text = await runCli(args, { env })
      expect(text.code).toBe(1)
      expect(text.stdout).toContain('verify the raw bytes as received, before any parsing')
      // Never the secret (runCli checks), the signature or the body.
      for (const output of [json.stdout + json.stderr, text.stdout + text.stderr]) {
        expect(output).not.toContain(headers['webhook-signature'])
        expect(output).not.toMatch(/h(é|\\u00e9)llo/)
      }
    })

    it('verify with another secret: no re-encoding matches, so the hint names the secret as the likely cause', async () => {
      const headers = await signedHeaders()
      const file = join(dir, 'other-secret-headers.json')
      await writeFile(file, JSON.stringify(headers))
      const result = await runCli(['verify', bodyFile, '--headers', file, '--secret', 'another-secret', '--json'], { env })
      expect(result.code).toBe(1)
      const verdict = JSON.parse(result.stdout)
      expect(verdict).toMatchObject({ valid: false, code: 'signature_mismatch' })
      expect(verdict).not.toHaveProperty('reencoding')
      expect(verdict.hints).toEqual([
        expect.stringMatching(/No usual re-encoding of the body matches either .*: the secret is the likely cause/),
      ])
    })

    it('verify with another secret: signature_mismatch, exit 1', async () => {
      const headers = await signedHeaders()
      const file = join(dir, 'headers.json')
      await writeFile(file, JSON.stringify(headers))
      const result = await runCli(['verify', bodyFile, '--headers', file, '--secret', 'another-secret'], { env })
      expect(result.code).toBe(1)
      expect(result.stdout).toMatch(/^✗ signature_mismatch \(a receiver answers 401\): The signature does not match/)
    })

    it('verify of an old capture: timestamp_too_old, the signature itself valid, and valid with --now', async () => {
      const headers = await signedHeaders(['--timestamp', '1767225600'])
      const file = join(dir, 'old-headers.json')
      await writeFile(file, JSON.stringify(headers))
      const result = await runCli(['verify', bodyFile, '--headers', file], { env })
      expect(result.code).toBe(1)
      expect(result.stdout).toContain('✗ timestamp_too_old (a receiver answers 401)')
      expect(result.stdout).toContain('signature itself is valid')
      const asOf = await runCli(['verify', bodyFile, '--headers', file, '--now', '1767225900', '--json'], { env })
      expect(asOf.code).toBe(0)
      expect(JSON.parse(asOf.stdout)).toEqual({ valid: true, id, timestamp: 1767225600, type: 'email.bounced', hints: [] })
    })

    it('verify reports missing, malformed and repeated headers with their codes', async () => {
      const missing = await runCli(['verify', bodyFile, '-H', `webhook-id: ${id}`, '--json'], { env })
      expect(missing.code).toBe(1)
      expect(JSON.parse(missing.stdout)).toMatchObject({ valid: false, code: 'missing_header', status: 401 })
      const prefixed = await runCli(
        [
          'verify',
          bodyFile,
          '-H',
          `webhook-id: ${id}`,
          '-H',
          'webhook-timestamp: 1767225600',
          '-H',
          `webhook-signature: v1,${'a'.repeat(64)}`,
        ],
        { env },
      )
      expect(prefixed.code).toBe(1)
      expect(prefixed.stdout).toContain('✗ malformed_signature')
      const twice = await runCli(
        [
          'verify',
          bodyFile,
          '-H',
          `webhook-id: ${id}`,
          '-H',
          `webhook-id: ${id}`,
          '-H',
          'webhook-timestamp: 1',
          '-H',
          `webhook-signature: ${'a'.repeat(64)}`,
          '--json',
        ],
        { env },
      )
      expect(JSON.parse(twice.stdout)).toMatchObject({ valid: false, code: 'duplicate_header' })
    })

    it('verify says when the signature is right but the body is not an event envelope (acknowledged, 200)', async () => {
      const file = join(dir, 'not-envelope.json')
      await writeFile(file, '[1,2]')
      const headers = JSON.parse((await runCli(['sign', file, '--json', '--id', 'evt-1'], { env })).stdout).headers
      const result = await runCli(['verify', file, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`])], { env })
      expect(result.code).toBe(1)
      expect(result.stdout).toContain('✗ invalid_envelope (a receiver answers 200)')
    })

    it('sign says what a receiver does when --id differs from the body\'s "id": 200 invalid_envelope, as the example answers', async () => {
      const result = await runCli(['sign', bodyFile, '--json', '--id', 'evt-other'], { env })
      expect(result.code).toBe(0)
      expect(result.stderr).toContain('a receiver acknowledges it (200, ignored: invalid_envelope) without running a handler')
      const { readFile } = await import('node:fs/promises')
      const { headers } = JSON.parse(result.stdout)
      const response = await fetch(server.url, { method: 'POST', headers, body: await readFile(bodyFile) })
      expect([response.status, await response.json()]).toEqual([200, { ok: true, ignored: 'invalid_envelope' }])
    })

    it('sign says that the body\'s "id" makes a resend a duplicate, and says nothing of it for a random id', async () => {
      const fromBody = await runCli(['sign', bodyFile], { env })
      expect(fromBody.stdout).toContain(`# webhook-id is the body's "id": a receiver that already handled it answers {"duplicate":true}`)
      const file = join(dir, 'no-id.json')
      await writeFile(file, '{"type":"email.bounced"}')
      const random = await runCli(['sign', file], { env })
      expect(random.code).toBe(0)
      expect(random.stdout).not.toContain('duplicate')
    })

    it('sign refuses a --timestamp in milliseconds and gives the seconds', async () => {
      const result = await runCli(['sign', bodyFile, '--timestamp', '1767225600123'], { env })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain('looks like milliseconds: use 1767225600.')
    })

    it('verify and sign refuse a bad number before reading anything, naming the option and what to give (exit 2)', async () => {
      const tolerance = await runCli(['verify', bodyFile, '--tolerance', '5m', '-H', 'webhook-id: a'], { env })
      expect([tolerance.code, tolerance.stdout]).toEqual([2, ''])
      expect(tolerance.stderr).toContain("option '--tolerance <seconds>' argument '5m' is invalid. Give a whole number from 0 to 31536000.")
      const now = await runCli(['verify', bodyFile, '--now', '-1', '-H', 'webhook-id: a'], { env })
      expect(now.stderr).toContain("option '--now <seconds>' argument '-1' is invalid. Give a whole number from 0 to 999999999999.")
      const timestamp = await runCli(['sign', bodyFile, '--timestamp', 'soon'], { env })
      expect([timestamp.code, timestamp.stdout]).toEqual([2, ''])
      expect(timestamp.stderr).toContain("option '--timestamp <seconds>' argument 'soon' is invalid. Give a whole number")
    })

    it('verify without headers is a usage error (exit 2)', async () => {
      const result = await runCli(['verify', bodyFile], { env })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain('--headers')
    })

    it.each(['send', 'replay', 'sign', 'verify'])('%s --help shows examples and exits 0', async (command) => {
      const result = await runCli([command, '--help'])
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(`Usage: email-webhooks ${command}`)
      expect(result.stdout).toContain('Examples:')
      expect(result.stdout).toContain('--json')
    })
  })
})
