import type { Options } from 'tsup'

const config: Options = {
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  dts: true,
  target: 'node20',
  platform: 'node',
  splitting: false,
  clean: false,
  removeNodeProtocol: false,
  external: [/^@email-webhooks\//, /^node:/],
}

export default config
