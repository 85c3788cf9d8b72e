// A real local three-node cluster for the tests: `sepp dev` (the binary
// `make sdk-typescript` builds, or $SEPP_BIN) on loopback, in a temporary
// folder, stopped (and its folder removed) by stop().
import { spawn, ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { before, after } from "node:test";
import { SeppClient } from "../src/index.js";

export interface DevNode {
  id: string;
  /** host:port of the API (gRPC, Connect, gRPC-Web). */
  addr: string;
  url: string;
  pid: number;
}

const here = dirname(fileURLToPath(import.meta.url));
export const seppBin = process.env.SEPP_BIN || resolve(here, "../../.build/sepp");

/** Every node keeps dead letters (a day), so drains have something to return;
 * the queue "origin" forwards its dead jobs to "origin.dead". */
const defaultExtra = `
[storage]
dead_letter_retention_ms = 86400000

[[queues]]
name = "origin"
dead_letter_queue = "origin.dead"

[[queues]]
name = "origin.dead"

[[queues]]
name = "kept"
completed_retention_ms = 3600000
`;

export class DevCluster {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly nodes: DevNode[],
    private readonly log: string[],
  ) {}

  /** What the nodes wrote to stderr, for a failing test's message. */
  logs(): string {
    return this.log.join("");
  }

  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  static async start(opts: { nodes?: number; extraToml?: string } = {}): Promise<DevCluster> {
    const dir = mkdtempSync(join(tmpdir(), "sepp-ts-"));
    const extra = join(dir, "extra.toml");
    writeFileSync(extra, opts.extraToml ?? defaultExtra);
    const child = spawn(seppBin, ["dev", "--nodes", String(opts.nodes ?? 3), "--dir", join(dir, "cluster"), "--extra", extra], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    // A test process that dies leaves no cluster behind: the nodes die
    // with `sepp dev` (Pdeathsig), and it with us.
    process.on("exit", () => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });
    const log: string[] = [];
    const nodes: DevNode[] = [];
    await new Promise<void>((resolveStart, reject) => {
      let out = "";
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`sepp dev did not come up within 90 s:\n${out}\n${log.join("")}`));
      }, 90_000);
      child.stdout?.on("data", (c) => {
        out += c.toString();
        if (out.includes("Ctrl-C stops the cluster.")) {
          clearTimeout(timer);
          for (const m of out.matchAll(/^\s+(\S+)\s+grpc (\S+)\s+http \S+\s+raft \S+\s+pid (\d+)/gm)) {
            nodes.push({ id: m[1]!, addr: m[2]!, url: `http://${m[2]}`, pid: Number(m[3]) });
          }
          resolveStart();
        }
      });
      child.stderr?.on("data", (c) => log.push(c.toString()));
      child.once("exit", (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`sepp dev exited (${code ?? sig}) before the cluster came up:\n${out}\n${log.join("")}`));
      });
    });
    if (nodes.length === 0) throw new Error("sepp dev printed no nodes");
    return new DevCluster(child, dir, nodes, log);
  }

  /** The index of the node that leads now, asking each node in turn. */
  async leaderIndex(timeoutMs = 20_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (const n of this.nodes) {
        if (!this.alive(n)) continue;
        try {
          const r = await post(n.url, "sepp.v1.ClusterService/Status", {});
          const addr = (r.leader as { grpcAddr?: string } | undefined)?.grpcAddr;
          const i = this.nodes.findIndex((x) => x.addr === addr);
          if (i >= 0 && this.alive(this.nodes[i]!)) return i;
        } catch {
          // ask the next
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("no leader within the timeout");
  }

  alive(n: DevNode): boolean {
    try {
      process.kill(n.pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /** kill -9 one node process, as a crash would. */
  async kill(i: number): Promise<void> {
    const n = this.nodes[i]!;
    process.kill(n.pid, "SIGKILL");
    const deadline = Date.now() + 10_000;
    while (this.alive(n) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  /** Ctrl-C: sepp dev stops every node; then the folder goes. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((r) => this.child.once("exit", () => r()));
      this.child.kill("SIGINT");
      const t = setTimeout(() => this.child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A raw Connect JSON call, as curl would make it. */
export async function post(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), 5_000);
  try {
    const r = await fetch(`${url}/${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: ctl.signal,
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`${path}: HTTP ${r.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  } finally {
    clearTimeout(t);
  }
}

/** Waits for cond, polling, up to timeoutMs. */
export async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Starts a three-node cluster and a client connected to it before a test
 * file's tests, hands both to ready, and closes them after the tests. */
export function useCluster(ready: (cluster: DevCluster, client: SeppClient) => void): void {
  let cluster: DevCluster | undefined;
  let client: SeppClient | undefined;
  before(
    async () => {
      cluster = await DevCluster.start();
      // No wait for the features: a new cluster's leader holds a unique,
      // expiring or schedule write until it has asked its members, rather
      // than refusing it, so the first tests run right after the start.
      client = await SeppClient.connect(cluster.urls);
      ready(cluster, client);
    },
    { timeout: 120_000 },
  );
  after(
    async () => {
      client?.close();
      await cluster?.stop();
    },
    { timeout: 60_000 },
  );
}
