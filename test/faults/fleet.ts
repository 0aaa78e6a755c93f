/**
 * Several receiver instances behind a round-robin balancer, as an app runs them on a shared
 * store: started together, each one's log lines tagged and kept, all killed at the end. A silent
 * fault scenario breaks the line between them and the store, not the instances.
 */
import { startBalancer } from './balancer.js'
import { type ReceiverConfig, type ReceiverProcess, type StoreConfig, startReceiver } from './processes.js'

export interface Fleet {
  /** The balancer's URL: where the sender delivers. */
  url: string
  instances: ReceiverProcess[]
  /** Every instance's log lines, as `<tag> <level> <line>`. */
  logs: string[]
  close(): Promise<void>
}

export interface FleetOptions {
  adapters: ReadonlyArray<'express' | 'hono'>
  store: StoreConfig
  journal: string
  /** A file of the scenario's scratch folder. */
  file: (name: string) => string
  options?: ReceiverConfig['options']
  stallCompletes?: number
  stallSlowCompletes?: boolean
  /** Names the instances' tags and logs. */
  name: string
}

/** Starts the instances and the balancer in front of them. */
export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const logs: string[] = []
  const instances = await Promise.all(
    o.adapters.map(async (adapter, index) => {
      const tag = `${o.name}${index}`
      const receiver = await startReceiver({
        adapter,
        store: o.store,
        journal: o.journal,
        log: o.file(`${o.name}-${index}.log`),
        tag,
        ...(o.options ? { options: o.options } : {}),
        ...(o.stallCompletes ? { stallCompletes: o.stallCompletes } : {}),
        ...(o.stallSlowCompletes ? { stallSlowCompletes: true } : {}),
      })
      receiver.child.on('message', (m: { type: string; level?: string; line?: string }) => {
        if (m.type === 'log') logs.push(`${tag} ${m.level} ${m.line}`)
      })
      return receiver
    }),
  )
  const balancer = await startBalancer(() => instances.map((i) => i.port))
  return {
    url: balancer.url,
    instances,
    logs,
    async close() {
      await balancer.close()
      await Promise.all(instances.map((i) => i.kill()))
    },
  }
}

/** `url` with its port replaced: a server's URL through a proxy in front of it. */
export function viaPort(url: string, port: number): string {
  const parsed = new URL(url)
  parsed.port = String(port)
  return parsed.href
}
