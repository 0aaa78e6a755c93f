/**
 * A TCP proxy on 127.0.0.1 that fails the way networks fail quietly, for the silent-fault tests:
 *   pass       forwards both ways;
 *   blackhole  accepts connections and never answers nor resets them: data sent on a connection
 *              open now (or opened while it lasts) is dropped, and such a connection stays dead
 *              even once the proxy passes again (a dropped NAT or conntrack entry, a failover that
 *              left pooled sockets open); connections opened after it work;
 *   reset      resets every open connection (RST) and each new one at once;
 *   delay      forwards each chunk `delayMs` late.
 * And once: `loseNextReply()` swallows the next chunk the server sends and then drops that
 * connection, as a connection that breaks after the server ran a command and before its reply
 * arrived (a driver that resends unanswered commands sends it again on its next connection).
 * Every socket is closed by `close()`.
 */
import { createServer, type Socket, connect as tcpConnect } from 'node:net'

export type ProxyMode = 'pass' | 'blackhole' | 'reset' | 'delay'

/** A proxy in front of one server. */
export interface FaultProxy {
  port: number
  /** The current mode. */
  readonly current: ProxyMode
  /** Switches the mode; `delayMs` for `delay` (default 200). */
  mode(mode: ProxyMode, options?: { delayMs?: number }): void
  /** Connections opened through it so far. */
  readonly opened: number
  /** The next reply from the server is lost, and its connection dropped (once). */
  loseNextReply(): void
  close(): Promise<void>
}

interface Pair {
  client: Socket
  upstream: Socket | undefined
  /** Blackholed: nothing crosses it any more. */
  dead: boolean
}

/** Starts a proxy on a free port of 127.0.0.1 to `targetPort` on 127.0.0.1. */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  const pairs = new Set<Pair>()
  let current: ProxyMode = 'pass'
  let delayMs = 200
  let opened = 0
  let loseReply = false
  const forward = (pair: Pair, from: Socket, to: () => Socket | undefined) => {
    from.on('data', (chunk: Buffer) => {
      if (pair.dead) return
      if (loseReply && from === pair.upstream) {
        loseReply = false
        drop(pair)
        return
      }
      const send = () => {
        if (!pair.dead) to()?.write(chunk)
      }
      if (current === 'delay') setTimeout(send, delayMs)
      else send()
    })
  }
  const drop = (pair: Pair) => {
    pair.client.destroy()
    pair.upstream?.destroy()
    pairs.delete(pair)
  }
  const server = createServer((client) => {
    opened++
    if (current === 'reset') {
      client.resetAndDestroy()
      return
    }
    const pair: Pair = { client, upstream: undefined, dead: current === 'blackhole' }
    pairs.add(pair)
    client.on('error', () => drop(pair))
    client.on('close', () => drop(pair))
    if (!pair.dead) {
      const upstream = tcpConnect(targetPort, '127.0.0.1')
      pair.upstream = upstream
      upstream.on('error', () => drop(pair))
      upstream.on('close', () => {
        // A server that closes a connection closes it for the client too, unless the line is dead.
        if (!pair.dead) drop(pair)
      })
      forward(pair, upstream, () => client)
    }
    forward(pair, client, () => pair.upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address !== 'object') throw new Error('the proxy has no port')
  return {
    port: address.port,
    get current() {
      return current
    },
    get opened() {
      return opened
    },
    loseNextReply() {
      loseReply = true
    },
    mode(mode, options) {
      current = mode
      if (options?.delayMs !== undefined) delayMs = options.delayMs
      if (mode === 'blackhole') for (const pair of pairs) pair.dead = true
      if (mode === 'reset') {
        for (const pair of [...pairs]) {
          pair.client.resetAndDestroy()
          pair.upstream?.destroy()
          pairs.delete(pair)
        }
      }
    },
    close() {
      for (const pair of [...pairs]) drop(pair)
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
