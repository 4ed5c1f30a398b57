/**
 * jest's node environment on a plain V8 context (`vm.constants.DONT_CONTEXTIFY`, Node 22+).
 *
 * jest 30 makes each test file's context from a JavaScript Proxy, so every global the code
 * under test reads (`Math`, `JSON`, `Buffer`, `Object`…) goes through node's contextify
 * interceptor and the proxy's traps: ~100-150 ns a lookup instead of ~1. The product's hot
 * loops paid that per character (the canonical hash: ~200x slower than in a worker) and every
 * test file pays it everywhere. Here the context is an ordinary one: its global object is the
 * global the tests see, and lookups are V8's own. What is given up is jest 30's globals
 * cleanup between files, which frees what a file left on its global; the context is dropped
 * at teardown anyway.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- jest loads this file as CommonJS
const vm = require('node:vm');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- jest loads this file as CommonJS
const { TestEnvironment } = require('jest-environment-node');

class PlainContextEnvironment extends TestEnvironment {
  constructor(config, context) {
    // Node before 22.8 has no uncontextified contexts: jest's own environment, as it is.
    if (vm.constants?.DONT_CONTEXTIFY === undefined) {
      super(config, context);
      return;
    }
    const createContext = vm.createContext;
    // The base constructor builds its context with `vm.createContext(proxy)`: for its duration
    // that call makes an uncontextified one instead (the proxy is not needed by anything else).
    vm.createContext = () => createContext(vm.constants.DONT_CONTEXTIFY);
    try {
      super(config, context);
    } finally {
      vm.createContext = createContext;
    }
  }
}

module.exports = PlainContextEnvironment;
