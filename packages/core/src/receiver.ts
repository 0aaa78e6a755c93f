/** The receiver pipeline's entry point; the steps live in ./receiver/. */
export * from './receiver/index.js'
