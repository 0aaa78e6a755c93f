/**
 * Closing the store a command opened. A SQLite store whose disk stopped answering rejects `close()`
 * with `timeout` (after its `closeTimeoutMs`) and leaves a sync stuck on libuv's thread pool, which
 * keeps the process from exiting, `process.exit()` included (Node waits for that thread). The
 * command then says so on stderr, finishes what it was doing (its other output, the handlers
 * module's `close()`), and `run()` ends the process with SIGKILL (exit status 137) instead of
 * returning. Any other failure to close is thrown.
 */
import { DedupStoreError } from '@email-webhooks/core'
import type { InboxStore } from './inbox-store.js'

/** Set once a store's close gave up on its disk in this process. */
let diskStuck = false

/**
 * Closes `opened`'s store; on a SQLite disk that stopped answering, says what it means for the
 * command and marks the process to be ended by `run()` ({@link endIfDiskStuck}).
 * @example
 * await closeStore(opened)
 */
export async function closeStore(opened: Pick<InboxStore, 'store' | 'kind' | 'description'>): Promise<void> {
  try {
    await opened.store.close?.()
  } catch (error) {
    if (!(opened.kind === 'sqlite' && error instanceof DedupStoreError && error.code === 'timeout')) throw error
    diskStuck = true
    process.stderr.write(
      `email-webhooks: the store (${opened.description}) could not be closed: its disk did not answer a sync in time. A change this command made may not be on disk: once the disk answers, look again (\`email-webhooks inbox stats\`, \`inbox list\`). Check the disk (I/O errors in the kernel log, a stalled network volume). Ending this process with SIGKILL (exit status 137), since the stuck sync keeps it from exiting otherwise.\n`,
    )
  }
}

/**
 * Ends the process with SIGKILL if a store's close gave up on its disk (called by `run()` once the
 * command is done and has printed everything): the stuck sync would keep it alive forever.
 * @param unprinted An error the command failed with that nothing printed yet: printed first.
 */
export function endIfDiskStuck(unprinted?: unknown): void {
  if (!diskStuck) return
  if (unprinted !== undefined)
    process.stderr.write(`${unprinted instanceof Error ? (unprinted.stack ?? unprinted.message) : String(unprinted)}\n`)
  process.kill(process.pid, 'SIGKILL')
}
