/**
 * What the queue handoff tests share: a TCP proxy on 127.0.0.1 that can refuse and cut connections
 * (the queue "goes down" for the receiver only, the server keeps its data), signed POSTs, and bounded
 * waits.
 */
import { createServer, type Socket, connect as tcpConnect } from 'node:net'
import type { SignedDelivery } from '@email-webhooks/core/testing'

/** A TCP proxy to a server on 127.0.0.1. */
export interface TcpProxy {
  port: number
  /** Cuts every open connection and refuses new ones until `up()`. */
  down(): void
  up(): void
  close(): Promise<void>
}

/** Starts a proxy on a free port of 127.0.0.1 to `targetPort` on 127.0.0.1. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const open = new Set<Socket>()
  let refusing = false
  const server = createServer((client) => {
    if (refusing) {
      client.destroy()
      return
    }
    const upstream = tcpConnect(targetPort, '127.0.0.1')
    for (const socket of [client, upstream]) {
      open.add(socket)
      socket.on('close', () => open.delete(socket))
      socket.on('error', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address !== 'object') throw new Error('the proxy has no port')
  return {
    port: address.port,
    down() {
      refusing = true
      for (const socket of open) socket.destroy()
    },
    up() {
      refusing = false
    },
    close() {
      for (const socket of open) socket.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

/** POSTs a signed delivery; the status, the JSON body and the headers. */
export async function post(url: string, delivery: SignedDelivery): Promise<{ status: number; json: unknown; headers: Headers }> {
  const answer = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body })
  return { status: answer.status, json: await answer.json(), headers: answer.headers }
}

/**
 * Sends `delivery` `copies` times at once, each copy sent again on 503 (at most 5 tries), as the
 * sender would: the enqueue may outlast storeTimeoutMs on a loaded machine.
 */
export function race(url: string, delivery: SignedDelivery, copies = 6): Promise<Awaited<ReturnType<typeof post>>[]> {
  const deliver = async () => {
    let answer = await post(url, delivery)
    for (let attempt = 1; answer.status === 503 && attempt < 5; attempt++) answer = await post(url, delivery)
    return answer
  }
  return Promise.all(Array.from({ length: copies }, deliver))
}

/** Polls `check` every 50 ms until it returns a value other than undefined, for at most `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A promise with its resolve, to hold a step until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {}
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}
