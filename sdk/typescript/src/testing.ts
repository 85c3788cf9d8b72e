// sepp/testing: a real sepp server for tests, in Node. startServer() runs
// the sepp binary as a cluster of one (`sepp serve`) on free loopback
// ports, its data in a temporary folder, and resolves once the node is
// ready (its /readyz answers 200); stop() ends it and removes the folder.
// Jobs go through the same state machine, leases, retries and dead-letter
// rules as in production.
//
// A module of its own (the package's "sepp/testing" export), never imported
// by the client: it needs Node (child_process, fs, net), the client does not.
import { spawn, ChildProcess } from "node:child_process";
import { accessSync, closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { SeppClient } from "./client.js";
import type { ClientOptions } from "./client.js";

/** How startServer runs the server. */
export interface TestServerOptions {
  /**
   * TOML as in a `sepp serve` config file: `[limits]`, `[storage]`,
   * `[[queues]]` (the node's addresses and data dir are the server's, given
   * on its command line).
   */
  config?: string;
  /** The sepp binary; default `$SEPP_BIN`, else `sepp` on `PATH`. */
  binary?: string;
  /** How long to wait for the node to be ready, in ms (default 30 000). */
  startupTimeoutMs?: number;
}

/** A running single-node sepp server; see startServer. */
export interface TestServer {
  /** The API's URL, `http://127.0.0.1:PORT`, for SeppClient.connect. */
  readonly url: string;
  /** `127.0.0.1:PORT` of the API (gRPC, Connect and gRPC-Web). */
  readonly address: string;
  /** `127.0.0.1:PORT` of /metrics, /healthz, /readyz and the admin UI. */
  readonly httpAddress: string;
  /** The temporary folder: the config, the log (sepp.log) and data/. */
  readonly dir: string;
  /** The end of the server's log (the last 8 KiB), for a failing test's message. */
  logs(): string;
  /** A client of this server; close it before stop(). */
  connect(options?: ClientOptions): Promise<SeppClient>;
  /** Stop the node (SIGTERM, SIGKILL after 10 s) and remove its folder. Safe to call twice. */
  stop(): Promise<void>;
}

/** The server could not be found, started or made ready; the message carries the end of its log. */
export class TestServerError extends Error {
  override name = "TestServerError";
}

/**
 * The sepp binary to run: `binary` if given, else `$SEPP_BIN`, else `sepp`
 * on `PATH`. Throws a TestServerError naming all three when none is there.
 */
export function findBinary(binary?: string): string {
  if (binary) {
    if (!isFile(binary)) throw new TestServerError(`sepp binary ${binary} does not exist`);
    return binary;
  }
  const env = process.env.SEPP_BIN;
  if (env) {
    if (!isFile(env)) throw new TestServerError(`SEPP_BIN names ${env}, which does not exist`);
    return env;
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const p = join(dir || ".", "sepp");
    try {
      accessSync(p, constants.X_OK);
      if (isFile(p)) return p;
    } catch {
      // not here
    }
  }
  throw new TestServerError(
    "no sepp binary: set SEPP_BIN to its path, or put `sepp` on PATH (in a checkout of the server: `make build` writes bin/sepp)",
  );
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Starts a real single-node sepp server and resolves once it is ready. A
 * port another process takes between choosing and binding it is retried
 * on other ports, twice. With node --test:
 *
 *     let server: TestServer;
 *     before(async () => { server = await startServer({ config: `[[queues]]\nname = "emails"\n` }); });
 *     after(() => server.stop());
 */
export async function startServer(options: TestServerOptions = {}): Promise<TestServer> {
  const binary = findBinary(options.binary);
  const dir = mkdtempSync(join(tmpdir(), "sepp-test-"));
  try {
    for (let attempt = 1; ; attempt++) {
      const server = await launch(binary, dir, options, attempt === 3);
      if (server) return server;
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** n loopback ports free a moment ago. */
async function freePorts(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (s) =>
          new Promise<number>((resolve, reject) => {
            s.once("error", reject);
            s.listen(0, "127.0.0.1", () => {
              const a = s.address();
              if (a && typeof a === "object") resolve(a.port);
              else reject(new TestServerError("no port"));
            });
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One start on fresh ports: the server once ready, undefined when a port was taken (and this is not the last try). */
async function launch(binary: string, dir: string, options: TestServerOptions, lastTry: boolean): Promise<RunningServer | undefined> {
  const [grpcPort, httpPort, raftPort] = await freePorts(3);
  const address = `127.0.0.1:${grpcPort}`;
  const httpAddress = `127.0.0.1:${httpPort}`;
  const args = ["serve", "--grpc-addr", address, "--http-addr", httpAddress, "--raft-addr", `127.0.0.1:${raftPort}`, "--data-dir", join(dir, "data")];
  if (options.config) {
    writeFileSync(join(dir, "sepp.toml"), options.config);
    args.push("--config", join(dir, "sepp.toml"));
  }
  const logFile = join(dir, "sepp.log");
  const log = openSync(logFile, "w");
  let child: ChildProcess;
  try {
    child = spawn(binary, args, { stdio: ["ignore", log, log] });
  } finally {
    closeSync(log);
  }
  const server = new RunningServer(child, dir, address, httpAddress, logFile);
  let exited: string | undefined;
  child.once("exit", (code, signal) => (exited = `${code ?? signal}`));
  child.on("error", (err) => (exited = err.message));
  const timeoutMs = options.startupTimeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited !== undefined) {
      await server.kill();
      if (server.logs().includes("address already in use") && !lastTry) return undefined;
      throw new TestServerError(`sepp serve exited (${exited}) before it was ready:\n${server.logs()}`);
    }
    if (await ready(httpAddress)) return server;
    await delay(50);
  }
  const logs = server.logs();
  await server.kill();
  throw new TestServerError(`sepp serve was not ready within ${timeoutMs} ms:\n${logs}`);
}

async function ready(httpAddress: string): Promise<boolean> {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), 1_000);
  try {
    const r = await fetch(`http://${httpAddress}/readyz`, { signal: ctl.signal });
    await r.text();
    return r.status === 200;
  } catch {
    return false;
  } finally {
    clearTimeout(t);
  }
}

class RunningServer implements TestServer {
  readonly url: string;
  private stopped: Promise<void> | undefined;
  // A test process that exits without stop() leaves no server behind.
  private readonly onExit = () => {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  };

  constructor(
    private readonly child: ChildProcess,
    readonly dir: string,
    readonly address: string,
    readonly httpAddress: string,
    private readonly logFile: string,
  ) {
    this.url = `http://${address}`;
    process.on("exit", this.onExit);
  }

  logs(): string {
    try {
      return readFileSync(this.logFile, "utf8").slice(-8192);
    } catch {
      return "";
    }
  }

  connect(options: ClientOptions = {}): Promise<SeppClient> {
    return SeppClient.connect(this.url, options);
  }

  /** Ends the process (SIGTERM, then SIGKILL after 10 s); keeps the folder. */
  kill(): Promise<void> {
    process.off("exit", this.onExit);
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const force = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
      this.child.once("exit", () => {
        clearTimeout(force);
        resolve();
      });
      this.child.kill("SIGTERM");
    });
  }

  stop(): Promise<void> {
    this.stopped ??= this.kill().then(() => rmSync(this.dir, { recursive: true, force: true }));
    return this.stopped;
  }
}
