// src/testing.ts itself: finding the binary, failing clearly, cleaning up.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { findBinary, startServer, TestServerError } from "../src/testing.js";
import { seppBin } from "./cluster.js";

/** Runs fn with process.env changed as given (undefined unsets), then restores it. */
function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test("findBinary names every place it looked", () => {
  const empty = mkdtempSync(join(tmpdir(), "sepp-ts-path-"));
  try {
    withEnv({ SEPP_BIN: undefined, PATH: empty }, () => {
      assert.throws(() => findBinary(), (e: unknown) => e instanceof TestServerError && /set SEPP_BIN .* or put `sepp` on PATH/.test(e.message));
    });
    withEnv({ SEPP_BIN: join(empty, "nope") }, () => {
      assert.throws(() => findBinary(), /SEPP_BIN names .*nope/);
    });
    assert.throws(() => findBinary(join(empty, "missing")), /does not exist/);
    // sepp on PATH, when it is an executable file.
    const fake = join(empty, "sepp");
    writeFileSync(fake, "#!/bin/sh\n");
    withEnv({ SEPP_BIN: undefined, PATH: empty }, () => assert.throws(() => findBinary(), /no sepp binary/));
    chmodSync(fake, 0o755);
    withEnv({ SEPP_BIN: undefined, PATH: empty }, () => assert.equal(findBinary(), fake));
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

test("stop ends the server and removes its folder", { timeout: 60_000 }, async () => {
  const server = await startServer({ binary: seppBin });
  assert.ok(existsSync(join(server.dir, "data")), "the data dir");
  const r = await fetch(`http://${server.httpAddress}/readyz`);
  assert.equal(r.status, 200);
  await server.stop();
  assert.ok(!existsSync(server.dir), "the folder is gone");
  await assert.rejects(fetch(`http://${server.httpAddress}/readyz`), "nothing listens any more");
  await server.stop(); // twice is fine
});

test("a config the server refuses rejects startServer with its log", { timeout: 60_000 }, async () => {
  await assert.rejects(startServer({ binary: seppBin, config: "[limits]\ndefault_priority = 12\n" }), (e: unknown) => {
    assert.ok(e instanceof TestServerError, String(e));
    assert.match(e.message, /exited \(1\) before it was ready:[\s\S]*default_priority/);
    return true;
  });
});
