import { readFileSync } from 'node:fs'

/**
 * Whether a pid has ended: gone, or a zombie (its parent has not reaped it: a parent gone in a
 * container, or strace still holding a sync of it).
 */
export function ended(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return true
  }
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return true
  }
}
