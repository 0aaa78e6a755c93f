/**
 * Reading a Node request stream (`IncomingMessage`, or any readable that emits `data`/`end`) under
 * a byte limit, for the Node adapters (Express, Koa, Fastify's raw stream). Runtime-neutral code:
 * no `node:` import and no `Buffer`, so core's web entry stays free of Node globals.
 */
import type { WebhookVerificationError } from './errors.js'
import { bodyTooLargeError } from './receiver/index.js'

/** The part of a Node readable stream the reader uses. */
export interface NodeBodyStream {
  on(event: string, listener: (arg: unknown) => void): unknown
  off(event: string, listener: (arg: unknown) => void): unknown
  resume(): unknown
}

/** The client hung up (or the stream failed) before the body was complete: nothing to answer. */
export class ClientAbortedError extends Error {
  override readonly name = 'ClientAbortedError'
}

/**
 * Reads a request stream into one byte array, refusing past `maxBytes` as soon as a chunk passes it:
 * the rest is discarded unread (the stream is resumed without buffering) so the adapter can answer
 * 413 at once; send that answer with `connection: close`.
 *
 * @param stream The request: an `IncomingMessage` whose body nobody has read yet.
 * @param maxBytes The receiver's `maxBodyBytes`.
 * @returns The exact bytes received.
 * @throws {WebhookVerificationError} `body_too_large` past `maxBytes`.
 * @throws {ClientAbortedError} when the client closed the connection or the stream failed mid-body.
 * @example
 * const body = await readNodeBody(req, receiver.maxBodyBytes)
 */
export function readNodeBody(stream: NodeBodyStream, maxBytes: number): Promise<Uint8Array> {
  return new Promise((resolve, reject: (error: WebhookVerificationError | ClientAbortedError) => void) => {
    const chunks: Uint8Array[] = []
    let total = 0
    const cleanup = (): void => {
      stream.off('data', onData)
      stream.off('end', onEnd)
      stream.off('error', onError)
      stream.off('close', onClose)
    }
    const onData = (data: unknown): void => {
      const chunk = data as Uint8Array
      total += chunk.byteLength
      if (total > maxBytes) {
        cleanup()
        stream.resume()
        reject(bodyTooLargeError(maxBytes))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = (): void => {
      cleanup()
      resolve(concat(chunks, total))
    }
    const onError = (error: unknown): void => {
      cleanup()
      reject(new ClientAbortedError((error as Error).message))
    }
    const onClose = (): void => {
      cleanup()
      reject(new ClientAbortedError('the client closed the connection before the body was complete'))
    }
    stream.on('data', onData)
    stream.on('end', onEnd)
    stream.on('error', onError)
    stream.on('close', onClose)
  })
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}
