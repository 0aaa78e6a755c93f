/**
 * Times every better-sqlite3 statement (`run`, `get`, `all`, and `exec` of the connection) of the process: `noted(ms, sql)` gets
 * each call's duration and its SQL (white space folded). Used by stats.mjs (STATS=1) and
 * seal-stalls.mjs (SLOW_SQL). Install before the store prepares its statements' first calls.
 */
export function timeStatements(Database, noted) {
  const probe = new Database(':memory:')
  const Statement = Object.getPrototypeOf(probe.prepare('SELECT 1'))
  probe.close()
  const exec = Database.prototype.exec
  Database.prototype.exec = function (source) {
    const started = performance.now()
    try {
      return exec.call(this, source)
    } finally {
      noted(performance.now() - started, source.replace(/\s+/g, ' '), 'exec')
    }
  }
  for (const name of ['run', 'get', 'all']) {
    const call = Statement[name]
    Statement[name] = function (...args) {
      const started = performance.now()
      try {
        return call.apply(this, args)
      } finally {
        noted(performance.now() - started, this.source.replace(/\s+/g, ' '), name)
      }
    }
  }
}
