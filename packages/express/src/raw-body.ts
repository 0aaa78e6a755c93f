/** Finding the raw request bytes in Express: a Buffer body, `req.rawBody`, or the unread stream (read under the limit). */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { bodyTooLargeError, declaredLengthExceeds } from '@email-webhooks/core'

type RawBodyRequest = IncomingMessage & { body?: unknown; rawBody?: unknown; _body?: unknown }

/** The message of a 500 `raw_body_unavailable`: the two fixes. */
export const RAW_BODY_GONE =
  '[@email-webhooks/express] the request body was already parsed (by express.json() or another body parser) and no raw bytes were kept, so the signature cannot be checked. Fix: mount the webhook route before express.json(), or keep the raw body with express.json({ verify: captureRawBody }) using captureRawBody from @email-webhooks/express.'

/**
 * Keeps the raw bytes when a JSON parser runs first: `app.use(express.json({ verify: captureRawBody }))`.
 * @param req The request; `req.rawBody` is set to the exact bytes received.
 * @param _res Unused.
 * @param buffer The raw body as body-parser read it.
 */
export function captureRawBody(req: IncomingMessage, _res: ServerResponse, buffer: Buffer): void {
  ;(req as RawBodyRequest).rawBody = buffer
}

/** The client hung up before the body was complete. */
export class ClientAborted extends Error {}

function readStream(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    const cleanup = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
    }
    const onData = (chunk: Buffer) => {
      total += chunk.length
      if (total > maxBytes) {
        cleanup()
        // Discard the rest without buffering it; the answer closes the connection.
        req.resume()
        reject(bodyTooLargeError(maxBytes))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total))
    }
    const onError = (error: Error) => {
      cleanup()
      reject(new ClientAborted(error.message))
    }
    const onClose = () => {
      cleanup()
      reject(new ClientAborted('the client closed the connection before the body was complete'))
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
  })
}

/** The raw bytes, in DESIGN order: Buffer body, `req.rawBody`, the unread stream; undefined when a parser consumed them. */
export function rawBody(req: RawBodyRequest, maxBytes: number): Promise<Uint8Array | string> | undefined {
  if (req.body instanceof Uint8Array) return Promise.resolve(req.body)
  const kept = req.rawBody
  if (kept instanceof Uint8Array || typeof kept === 'string') return Promise.resolve(kept)
  if (req._body === true || req.readableEnded) return undefined
  if (declaredLengthExceeds(req.headers['content-length'], maxBytes)) return Promise.reject(bodyTooLargeError(maxBytes))
  return readStream(req, maxBytes)
}
