/**
 * Chromium for the console's browser tests: Debian's (`/usr/bin/chromium`, installed by
 * scripts/services.mjs; nothing here downloads a browser), driven by playwright-core, headless,
 * with no network of its own (no background traffic, no updates, no sync, no QUIC) and a fresh
 * profile per launch (Playwright's temporary --user-data-dir). A missing browser is an error that
 * says how to install it, never a skipped test.
 */
import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

/** The Chromium the tests drive: EMAIL_WEBHOOKS_CHROMIUM, else Debian's. */
export const CHROMIUM = process.env.EMAIL_WEBHOOKS_CHROMIUM ?? '/usr/bin/chromium'

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/**
 * Starts Chromium.
 * @throws {Error} when it is not installed, saying how to get it.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}, and the browser tests (the console's and the documentation site's) need it. Run the tests with \`npm test\` (scripts/services.mjs installs Debian's chromium as root or with sudo), or run \`apt-get install chromium\`, or set EMAIL_WEBHOOKS_CHROMIUM to a Chromium binary.`,
    )
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS })
}
