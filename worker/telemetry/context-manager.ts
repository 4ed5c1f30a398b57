/**
 * An OpenTelemetry context manager over Node's `AsyncLocalStorage`, so the active span
 * follows an activity through its awaits. The Temporal activity interceptor makes the
 * `RunActivity:*` span a child of the workflow's `StartActivity:*` span with
 * `context.with(parent, …)`; under the API's default no-op context manager that parent is
 * dropped and every activity span would start a trace of its own. (The same class the
 * interceptors use inside the workflow sandbox; `@opentelemetry/context-async-hooks` would
 * do too, it is just not a dependency.)
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, type Context, type ContextManager } from '@opentelemetry/api';

/** `AsyncLocalStorage`-backed {@link ContextManager}. */
export class AsyncLocalStorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const cb = thisArg == null ? fn : (fn.bind(thisArg) as F);
    return this.storage.run(context, cb, ...args);
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const manager = this;
    const bound = function (this: unknown, ...args: unknown[]) {
      return manager.with(context, () => (target as (...a: unknown[]) => unknown).apply(this, args));
    };
    return bound as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}
