/**
 * Closing the store a command opened. A SQLite store whose disk stopped answering rejects `close()`
 * with `timeout` (after its `closeTimeoutMs`) and leaves a sync stuck on libuv's thread pool, which
 * keeps the process from exiting, `process.exit()` included (Node waits for that thread): the
 * command says so on stderr and ends itself with SIGKILL (exit status 137), as the error tells a
 * program to. Any other failure to close is thrown.
 */
import { DedupStoreError } from '@email-webhooks/core'
import { plainMessage } from './errors.js'
import type { InboxStore } from './inbox-store.js'

/**
 * Closes `opened`'s store; on a SQLite disk that stopped answering, prints why and ends the process with SIGKILL.
 * @example
 * await closeStore(opened)
 */
export async function closeStore(opened: Pick<InboxStore, 'store' | 'kind' | 'description'>): Promise<void> {
  try {
    await opened.store.close?.()
  } catch (error) {
    if (!(opened.kind === 'sqlite' && error instanceof DedupStoreError && error.code === 'timeout')) throw error
    process.stderr.write(
      `email-webhooks: the store (${opened.description}) could not be closed: ${plainMessage(error)}\nemail-webhooks: ending this process with SIGKILL (exit status 137), since the stuck sync keeps it from exiting otherwise.\n`,
    )
    process.kill(process.pid, 'SIGKILL')
  }
}
