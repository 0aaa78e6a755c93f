// The documentation site, built and served: `buildSite()` runs VitePress on docs/, `serveSite()`
// serves a built site from a folder on 127.0.0.1 as GitHub Pages does (`/guides/cli` is
// guides/cli.html, `/reference/` is reference/index.html, anything else is the site's 404 page
// with status 404). `npm run docs` and the browser test use both.
import { spawn } from 'node:child_process'
import { createReadStream, existsSync, statSync } from 'node:fs'
import { createServer } from 'node:http'
import { extname, join, normalize, resolve, sep } from 'node:path'
import { ROOT } from './docs-site.mjs'

/** Where `vitepress build` writes the site unless told otherwise. */
export const SITE_DIST = join(ROOT, 'docs/.vitepress/dist')
const VITEPRESS = join(ROOT, 'docs/node_modules/vitepress/bin/vitepress.js')

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml',
}

/**
 * Builds the site with VitePress into `outDir` (default docs/.vitepress/dist); resolves with the
 * exit code and the output, which names the page and link when a link is broken.
 */
export function buildSite({ outDir = SITE_DIST, env = {}, quiet = false } = {}) {
  if (!existsSync(VITEPRESS)) {
    throw new Error(
      'VitePress is not installed: run `npx -y pnpm@12 install` at the root of the repository (docs/ is a workspace package).',
    )
  }
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [VITEPRESS, 'build', 'docs', '--outDir', outDir], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    const keep = (chunk) => {
      output += chunk
      if (!quiet) process.stdout.write(chunk)
    }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    child.on('error', fail)
    child.on('close', (code, signal) => done({ code: code ?? (signal ? 1 : 0), output }))
  })
}

/** The file a request path is answered with, or undefined (a 404). */
function fileFor(dir, pathname) {
  let path
  try {
    path = decodeURIComponent(pathname)
  } catch {
    return undefined
  }
  const full = normalize(join(dir, path))
  if (full !== dir && !full.startsWith(dir + sep)) return undefined
  const candidates = path.endsWith('/') ? [join(full, 'index.html')] : [full, `${full}.html`, join(full, 'index.html')]
  return candidates.find((file) => existsSync(file) && statSync(file).isFile())
}

/**
 * Serves the built site in `dir` on 127.0.0.1 (`port` 0: any free port); resolves with its URL and
 * a `close()` that ends every connection.
 */
export function serveSite(dir = SITE_DIST, { port = 0, host = '127.0.0.1' } = {}) {
  const root = resolve(dir)
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end()
      return
    }
    const { pathname } = new URL(req.url ?? '/', 'http://site')
    const file = fileFor(root, pathname)
    const notFound = join(root, '404.html')
    const [status, path] = file ? [200, file] : [404, existsSync(notFound) ? notFound : undefined]
    res.writeHead(status, { 'content-type': TYPES[extname(path ?? '.txt')] ?? 'application/octet-stream', 'cache-control': 'no-store' })
    if (req.method === 'HEAD' || !path) res.end(path ? undefined : 'Not found')
    else createReadStream(path).pipe(res)
  })
  return new Promise((done, fail) => {
    server.once('error', fail)
    server.listen(port, host, () => {
      const address = server.address()
      done({
        url: `http://${host}:${address.port}/`,
        close: () =>
          new Promise((closed) => {
            server.closeAllConnections()
            server.close(() => closed())
          }),
      })
    })
  })
}
