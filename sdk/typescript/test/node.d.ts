// The Node built-ins only the tests use, typed just enough for strict mode
// (Debian packages no @types/node); src/node.d.ts has the ones
// src/testing.ts uses too.
declare module "node:test" {
  type Fn = (t: { diagnostic(msg: string): void; after?(fn: () => unknown): void }) => unknown;
  export function test(name: string, fn: Fn): Promise<void>;
  export function test(name: string, opts: { timeout?: number; concurrency?: number | boolean }, fn: Fn): Promise<void>;
  export function describe(name: string, fn: () => unknown): void;
  export function before(fn: () => unknown, opts?: { timeout?: number }): void;
  export function after(fn: () => unknown, opts?: { timeout?: number }): void;
}

declare module "node:assert/strict" {
  interface Assert {
    (value: unknown, message?: string): asserts value;
    ok(value: unknown, message?: string): asserts value;
    equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    notEqual(actual: unknown, expected: unknown, message?: string): void;
    deepEqual<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    match(value: string, re: RegExp, message?: string): void;
    rejects(p: Promise<unknown> | (() => Promise<unknown>), expected?: unknown, message?: string): Promise<void>;
    throws(fn: () => unknown, expected?: unknown, message?: string): void;
    fail(message?: string): never;
  }
  const assert: Assert;
  export default assert;
}

declare module "node:url" {
  export function fileURLToPath(u: string | URL): string;
}

interface ImportMeta {
  url: string;
}
