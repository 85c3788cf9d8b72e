// The few Node built-ins src/testing.ts (and the tests) use, typed just
// enough for strict mode: Debian packages no @types/node, and the client
// itself needs none (it runs on fetch alone). A declaration file: tsc emits
// nothing for it, so the package's own .d.ts files never name these types
// and cannot clash with a user's @types/node.
declare const process: {
  env: Record<string, string | undefined>;
  pid: number;
  execPath: string;
  cwd(): string;
  kill(pid: number, signal?: string | number): boolean;
  on(event: string, fn: (...args: unknown[]) => void): void;
  off(event: string, fn: (...args: unknown[]) => void): void;
  exitCode: number | undefined;
};

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
    on(event: "error", fn: (err: Error) => void): void;
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
  export function openSync(path: string, flags: string): number;
  export function closeSync(fd: number): void;
  export function accessSync(path: string, mode?: number): void;
  export function chmodSync(path: string, mode: number): void;
  export function statSync(path: string): { isFile(): boolean };
  export const constants: { X_OK: number };
}

declare module "node:path" {
  export function join(...parts: string[]): string;
  export function resolve(...parts: string[]): string;
  export function dirname(p: string): string;
  export const delimiter: string;
}

declare module "node:os" {
  export function tmpdir(): string;
}

declare module "node:net" {
  export interface Server {
    listen(port: number, host: string, cb: () => void): Server;
    address(): { port: number } | string | null;
    close(cb?: () => void): Server;
    once(event: "error", fn: (err: Error) => void): Server;
  }
  export function createServer(): Server;
}
