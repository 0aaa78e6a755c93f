/**
 * `pnpm demo` (examples/express/src/demo.js) prints what the receiver actually answered and what
 * the handlers did, and exits 0 only when every answer and handler outcome is the right one.
 */
import { execFile } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The printed table row whose "sent" column is `what`. */
function row(output: string, what: string): string {
  const line = output.split('\n').find((text) => new RegExp(`^\\d+\\s+${what.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s{2}`).test(text))
  if (!line) throw new Error(`no row for "${what}" in:\n${output}`)
  return line
}

describe('the demo', () => {
  it('prints each answer, the receiver error codes and the handler outcomes, and exits 0', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(ROOT, 'examples/express/src/demo.js')], {
      timeout: 60_000,
    })
    expect(row(stdout, 'email.queued')).toMatch(/\s200\s+ok\s+none for this type$/)
    expect(row(stdout, 'email.bounced')).toMatch(/\s200\s+ok\s+markBounced\(…[0-9a-f]{4}\) ok$/)
    expect(row(stdout, 'organization.updated (unknown type)')).toMatch(/onUnknown\(organization\.updated\) ok$/)
    expect(row(stdout, 'email.bounced again (same webhook-id)')).toMatch(/\s200\s+ok, duplicate\s+not run$/)
    expect(row(stdout, 'email.complained, body tampered')).toMatch(/\s401\s+signature_mismatch\s+not run$/)
    expect(row(stdout, 'email.bounced signed 10 min ago')).toMatch(/\s401\s+timestamp_too_old\s+not run$/)
    expect(row(stdout, 'email.bounced signed 10 min ahead')).toMatch(/\s401\s+timestamp_too_new\s+not run$/)
    expect(row(stdout, 'email.bounced, handler fails')).toMatch(
      /\s500\s+handler_failed\s+markBounced\(…[0-9a-f]{4}\) threw: database unavailable \(simulated\)$/,
    )
    // The receiver's own message is printed under its row, not a text fixed in the demo.
    expect(stdout).toMatch(/timestamp_too_new.*\n {4}\S[^\n]*future/)
    // The receiver's log lines come after the table (the demo passes a logger), not on stderr before
    // it: the one warning for a bad signature among good ones (a body changed on its way), the one
    // for a timestamp out of the window (with the measured offset), then the 500 with where the
    // handler threw.
    expect(stdout).toMatch(/What the receiver logged[^\n]*\n {2}\[@email-webhooks\/core\] 401 signature_mismatch: /)
    expect(stdout).toMatch(/\n {2}\[@email-webhooks\/core\] 500 handler_failed email\.bounced [^[]*\(at\s+file:\S+demo\.js:\d+:\d+\)/)
    expect(stdout).toMatch(/\n {2}\[@email-webhooks\/core\] 401 timestamp_too_old: [^[]*was 600 s behind this server's clock/)
    expect(stdout.match(/\[@email-webhooks\/core\]/g)).toHaveLength(3)
    expect(stderr).toBe('')
    expect(stdout).toContain('All 19 answers and handler outcomes are the ones the sender needs.')
  })
})
