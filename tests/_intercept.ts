/**
 * A store with one family method wrapped, for tests that count or alter
 * the calls an engine or a handler makes.
 *
 * @module
 */
import type { Store } from "../store/mod.ts";

/**
 * `store` with `family.method` replaced by `around`, which receives the
 * original (bound) and the call's arguments; everything else passes through.
 */
export function intercept<F extends keyof Store>(
  store: Store,
  target: { family: F; method: string },
  // deno-lint-ignore no-explicit-any
  around: (original: (...args: any[]) => Promise<any>, ...args: any[]) => Promise<unknown>,
): Store {
  const bound = (owner: object, key: PropertyKey) => {
    const value = Reflect.get(owner, key, owner);
    return typeof value === "function" ? value.bind(owner) : value;
  };
  return new Proxy(store, {
    get(s, key) {
      if (key !== target.family) return bound(s, key);
      return new Proxy(s[target.family] as object, {
        get(family, k) {
          const value = bound(family, k);
          return k === target.method ? (...args: unknown[]) => around(value, ...args) : value;
        },
      });
    },
  });
}
