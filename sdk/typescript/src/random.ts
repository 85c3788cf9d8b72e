// Idempotency keys and reserve request ids: 16 random bytes, hex. They
// only need to be unique, but a guessable key would let one client's
// enqueue be taken for another's, so they come from a CSPRNG when the
// runtime has one (browsers, Node 19+: globalThis.crypto; Node 18:
// node:crypto's webcrypto, loaded once by SeppClient.connect).

type RandomFill = (b: Uint8Array) => void;

let fill: RandomFill | undefined;

function webFill(c: unknown): RandomFill | undefined {
  const g = (c as { getRandomValues?: (b: Uint8Array) => Uint8Array } | undefined)?.getRandomValues;
  return typeof g === "function" ? (b) => void g.call(c, b) : undefined;
}

/** Finds the runtime's CSPRNG; called (and awaited) by SeppClient.connect. */
export async function randomSource(): Promise<void> {
  if (fill) return;
  fill = webFill((globalThis as { crypto?: unknown }).crypto);
  if (fill) return;
  try {
    // Node 18 has webcrypto only under node:crypto. A variable specifier
    // keeps bundlers for browsers from trying to resolve it.
    const name = "node:crypto";
    const m = (await import(name)) as { webcrypto?: unknown };
    fill = webFill(m.webcrypto);
  } catch {
    // No CSPRNG: fall back below.
  }
}

const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** A fresh random key: 32 hex digits. */
export function newKey(): string {
  const b = new Uint8Array(16);
  if (fill) fill(b);
  else for (let i = 0; i < b.length; i++) b[i] = Math.floor(Math.random() * 256);
  let s = "";
  for (const x of b) s += hex[x];
  return s;
}
