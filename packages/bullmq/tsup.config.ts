import type { Options } from 'tsup'

const config: Options = {
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  target: 'node20',
  platform: 'neutral',
  splitting: false,
  clean: false,
  removeNodeProtocol: false,
  external: [/^@email-webhooks\//, /^node:/, 'bullmq'],
}

export default config
