import { runHttpBench } from './http.js'

await runHttpBench({
  durationSeconds: 4,
  warmupSeconds: 1,
  onResult: (r) =>
    console.log(
      r.label.padEnd(56),
      Math.round(r.perSecond),
      r.p50,
      r.p99,
      'non2xx',
      r.non2xx,
      'err',
      r.errors,
      'handled',
      r.handled,
      'distinct',
      r.distinct,
    ),
})
