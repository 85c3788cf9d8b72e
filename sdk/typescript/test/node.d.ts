// The few Node built-ins the tests use, typed just enough for strict mode:
// Debian packages no @types/node, and the SDK itself needs none (it runs
// on fetch alone).
declare const process: {
  env: Record<string, string | undefined>;
  pid: number;
  execPath: string;
  cwd(): string;
  kill(pid: number, signal?: string | number): boolean;
  on(event: string, fn: (...args: unknown[]) => void): void;
  exitCode: number | undefined;
};

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

declare module "node:child_process" {
  interface Readable {
    on(event: "data", fn: (chunk: { toString(): string }) => void): void;
  }
  export interface ChildProcess {
    pid?: number;
    exitCode: number | null;
    signalCode: string | null;
    stdout: Readable | null;
    stderr: Readable | null;
    kill(signal?: string): boolean;
    on(event: "exit", fn: (code: number | null, signal: string | null) => void): void;
    once(event: "exit", fn: (code: number | null, signal: string | null) => void): void;
  }
  export function spawn(
    cmd: string,
    args: string[],
    opts?: { stdio?: unknown; env?: Record<string, string | undefined>; cwd?: string; detached?: boolean },
  ): ChildProcess;
  export function execFileSync(cmd: string, args: string[], opts?: { cwd?: string; encoding?: string; stdio?: unknown; env?: Record<string, string | undefined> }): string;
}

declare module "node:fs" {
  export function mkdtempSync(prefix: string): string;
  export function rmSync(path: string, opts?: { recursive?: boolean; force?: boolean }): void;
  export function writeFileSync(path: string, data: string): void;
  export function readFileSync(path: string, enc: "utf8"): string;
  export function readdirSync(path: string): string[];
  export function mkdirSync(path: string, opts?: { recursive?: boolean }): void;
  export function symlinkSync(target: string, path: string): void;
  export function existsSync(path: string): boolean;
}

declare module "node:path" {
  export function join(...parts: string[]): string;
  export function resolve(...parts: string[]): string;
  export function dirname(p: string): string;
}

declare module "node:os" {
  export function tmpdir(): string;
}

declare module "node:url" {
  export function fileURLToPath(u: string | URL): string;
}

interface ImportMeta {
  url: string;
}
