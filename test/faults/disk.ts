/**
 * A full disk and a slow one for the SQLite store.
 *
 * Full: a small tmpfs mounted for the store's folder and filled up with a file while traffic
 * runs (real ENOSPC from the kernel; removing the file gives the space back). Mounting needs
 * root and a kernel that lets this container mount: where that is refused (a laptop with sudo,
 * an unprivileged container) the fallback is strace, which runs the receiver and injects ENOSPC
 * into its writes of the WAL (`pwrite64` on `<db>-wal`) from the K-th one on; SIGKILL to strace
 * detaches it, and the space is back. `FAULTS_DISK=strace` picks the fallback where both work.
 *
 * Slow: strace delays every `fdatasync` (the store's WAL sync) of the receiver.
 */
import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmdirSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export type DiskFullMethod = 'tmpfs' | 'strace'

const mounted = new Set<string>()
function unmountAll(): void {
  for (const dir of mounted) unmount(dir)
}
process.once('exit', unmountAll)
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    unmountAll()
    process.kill(process.pid, signal)
  })

function unmount(dir: string): void {
  try {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' })
  } catch {}
  mounted.delete(dir)
  try {
    rmdirSync(dir)
  } catch {}
}

/** Mounts a tmpfs of `sizeMiB` on a new folder; throws when mounting is refused. */
export function mountTmpfs(sizeMiB: number): { dir: string; unmount: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-tmpfs-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'email-webhooks-faults', dir], { stdio: 'pipe' })
  } catch (error) {
    rmdirSync(dir)
    throw error
  }
  mounted.add(dir)
  return { dir, unmount: () => unmount(dir) }
}

/** How the disk-full scenario fills the disk here: tmpfs when this process may mount one (root, and the kernel allows it), else strace. */
export function diskFullMethod(): DiskFullMethod {
  if (process.env.FAULTS_DISK === 'strace') return 'strace'
  if (process.getuid?.() !== 0) return 'strace'
  try {
    mountTmpfs(1).unmount()
    return 'tmpfs'
  } catch {
    return 'strace'
  }
}

/** Writes a file in `dir` until the file system is full (ENOSPC); `free()` deletes it. Returns the bytes written. */
export function fillUp(dir: string): { bytes: number; free: () => void } {
  const path = join(dir, 'filler')
  const fd = openSync(path, 'w')
  let bytes = 0
  try {
    for (const size of [1 << 20, 1 << 12]) {
      const chunk = Buffer.alloc(size, 1)
      for (;;) {
        try {
          bytes += writeSync(fd, chunk)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break
          throw error
        }
      }
    }
  } finally {
    closeSync(fd)
  }
  return { bytes, free: () => rmSync(path, { force: true }) }
}

/**
 * strace arguments that inject ENOSPC into the receiver's writes of `walPath` from the
 * `fromWrite`-th one on. No --seccomp-bpf: its filter stays in the receiver after strace is
 * gone, and a traced call without a tracer fails with ENOSYS, so the disk would never come back.
 */
export function straceDiskFull(walPath: string, fromWrite: number): string[] {
  return ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=pwrite64', '-P', walPath, '-e', `inject=pwrite64:error=ENOSPC:when=${fromWrite}+`]
}

/** strace arguments that delay every fdatasync of the receiver by `delayMs` (the store's WAL syncs; the journal uses fsync). */
export function straceSlowSync(delayMs: number): string[] {
  return ['-f', '--seccomp-bpf', '-qq', '-o', '/dev/null', '-e', 'trace=fdatasync', '-e', `inject=fdatasync:delay_enter=${delayMs}ms`]
}
