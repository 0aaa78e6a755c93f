// `koa2` is an alias of koa@2 (see package.json); its API matches @types/koa closely enough for the suite.
declare module 'koa2' {
  import Koa from 'koa'
  export default Koa
}
