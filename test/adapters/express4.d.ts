// `express4` is an alias of express@4 (see package.json); its API matches @types/express closely enough for the suite.
declare module 'express4' {
  import express from 'express'
  export default express
}
