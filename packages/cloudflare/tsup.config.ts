import type { Options } from 'tsup'

const config: Options = {
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  target: 'es2022',
  platform: 'neutral',
  splitting: false,
  clean: false,
  removeNodeProtocol: false,
  external: [/^@email-webhooks\//],
}

export default config
