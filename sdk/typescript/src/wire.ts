// The protos' JSON mapping (what the Connect protocol carries) and the
// little binary protobuf decoding the error details need. Nothing here
// touches the network. The JSON shapes of sepp.v1's messages are generated
// from the protos into src/gen (make generate); google.rpc's few are read
// by hand below.

import type { FieldViolationJSON, NotLeaderJSON, ScheduledTooFarJSON, UnknownOutcomeJSON } from "./gen/sepp/v1/errors_json.js";

/** Bytes as the JSON mapping sends them: standard base64. */
export function bytesToBase64(b: Uint8Array): string {
  let s = "";
  // In slices: String.fromCharCode takes its arguments on the stack.
  for (let i = 0; i < b.length; i += 0x8000) {
    s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** Decodes standard or URL-safe base64, padded or not. */
export function base64ToBytes(s: string): Uint8Array {
  let t = s.replace(/-/g, "+").replace(/_/g, "/");
  while (t.length % 4 !== 0) t += "=";
  const bin = atob(t);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** A payload given as text is sent as its UTF-8 bytes. */
export function payloadBytes(p: Uint8Array | string | undefined): Uint8Array | undefined {
  if (p === undefined) return undefined;
  return typeof p === "string" ? utf8.encode(p) : p;
}

export function decodeText(b: Uint8Array): string {
  return utf8Decoder.decode(b);
}

/** A duration in milliseconds as google.protobuf.Duration's JSON ("1.5s"). */
export function durationJSON(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`duration must be finite, got ${ms}`);
  // Whole milliseconds: toFixed(3) never switches to exponent notation.
  return `${(Math.round(ms) / 1000).toFixed(3)}s`;
}

/** google.protobuf.Duration's JSON ("30s", "1.500s") in milliseconds; absent or unparsable is 0. */
export function durationFrom(v: unknown): number {
  if (typeof v !== "string") return 0;
  const m = /^(-?)(\d+)(?:\.(\d{1,9}))?s$/.exec(v);
  if (!m) return 0;
  const ms = Number(m[2]) * 1000 + Math.floor(Number((m[3] ?? "").padEnd(9, "0")) / 1e6);
  return m[1] === "-" ? -ms : ms;
}

/** google.protobuf.Timestamp's JSON (RFC 3339) as a Date; null/absent/zero is undefined. */
export function timeFrom(v: unknown): Date | undefined {
  if (typeof v !== "string" || v === "") return undefined;
  const d = new Date(v);
  if (Number.isNaN(d.getTime()) || d.getTime() === 0) return undefined;
  return d;
}

/** A uint64/int64 as JSON carries it (a string, or a number from a lenient peer). */
export function u64(v: unknown): string {
  if (typeof v === "string") return v === "" ? "0" : v;
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  return "0";
}

export function num(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "string" && v !== "") return Number(v);
  return 0;
}

export function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

export type JSONObject = { [k: string]: unknown };

export function obj(v: unknown): JSONObject {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as JSONObject) : {};
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/**
 * A decoded JSON value read as T, the generated protojson shape of a proto
 * message (src/gen): a field the proto renamed or removed is then a compile
 * error where it is read. Only the top level is checked at run time (a
 * non-object reads as {}); each field's value is checked where it is read
 * (str, num, u64, timeFrom ...), since a lenient peer may send another form.
 */
export function message<T extends object>(v: unknown): T {
  const o: object = obj(v);
  return o as T;
}

// ---- binary protobuf, just enough for google.rpc.Status details ----

/** One decoded field: a varint (as bigint, to keep 64 bits) or bytes. */
type Field = { num: number; varint?: bigint; bytes?: Uint8Array };

/** Decodes the top level of a protobuf message into its fields, in order. */
export function decodeFields(b: Uint8Array): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= b.length) throw new Error("protobuf: truncated varint");
      const c = b[i++]!;
      v |= BigInt(c & 0x7f) << shift;
      if ((c & 0x80) === 0) return v;
      shift += 7n;
      if (shift > 63n) throw new Error("protobuf: varint too long");
    }
  };
  while (i < b.length) {
    const tag = varint();
    const num = Number(tag >> 3n);
    switch (Number(tag & 7n)) {
      case 0:
        out.push({ num, varint: varint() });
        break;
      case 1:
        i += 8;
        break;
      case 2: {
        const n = Number(varint());
        if (i + n > b.length) throw new Error("protobuf: truncated field");
        out.push({ num, bytes: b.subarray(i, i + n) });
        i += n;
        break;
      }
      case 5:
        i += 4;
        break;
      default:
        throw new Error("protobuf: unsupported wire type");
    }
  }
  return out;
}

function fieldString(fs: Field[], n: number): string {
  const f = fs.find((x) => x.num === n && x.bytes !== undefined);
  return f?.bytes ? decodeText(f.bytes) : "";
}

function fieldInt(fs: Field[], n: number): bigint {
  return fs.find((x) => x.num === n && x.varint !== undefined)?.varint ?? 0n;
}

function fieldTimestamp(fs: Field[], n: number): Date | undefined {
  const f = fs.find((x) => x.num === n && x.bytes !== undefined);
  if (!f?.bytes) return undefined;
  const t = decodeFields(f.bytes);
  const ms = Number(fieldInt(t, 1)) * 1000 + Math.floor(Number(fieldInt(t, 2)) / 1e6);
  return new Date(ms);
}

/** An error detail the server sends, decoded. Unknown types keep their bytes. */
export type ErrorDetail =
  | { type: "sepp.v1.FieldViolation"; field: string; limit: string; description: string }
  | { type: "sepp.v1.ScheduledTooFar"; queue: string; horizonMs: number; requestedAt?: Date; latestAllowed?: Date }
  | { type: "sepp.v1.NotLeader"; leaderId: string; leaderGrpcAddr: string; leaderHttpAddr: string }
  | { type: "sepp.v1.UnknownOutcome"; reason: string }
  | { type: "google.rpc.BadRequest"; fieldViolations: { field: string; description: string }[] }
  | { type: "google.rpc.PreconditionFailure"; violations: { type: string; subject: string; description: string }[] }
  | { type: "google.rpc.ResourceInfo"; resourceType: string; resourceName: string; owner: string; description: string }
  | { type: "google.rpc.RetryInfo"; retryDelayMs: number }
  | { type: string; value: Uint8Array };

/** Decodes a detail from its type name and binary value (what Connect's
 * error JSON carries in "type" and "value"; "debug" is optional and not
 * relied on). */
export function decodeDetail(type: string, value: Uint8Array): ErrorDetail {
  const name = type.replace(/^type\.googleapis\.com\//, "");
  const fs = decodeFields(value);
  switch (name) {
    case "sepp.v1.FieldViolation":
      return { type: name, field: fieldString(fs, 1), limit: fieldString(fs, 2), description: fieldString(fs, 3) };
    case "sepp.v1.ScheduledTooFar":
      return {
        type: name,
        queue: fieldString(fs, 1),
        horizonMs: Number(fieldInt(fs, 2)),
        requestedAt: fieldTimestamp(fs, 3),
        latestAllowed: fieldTimestamp(fs, 4),
      };
    case "sepp.v1.NotLeader":
      return { type: name, leaderId: fieldString(fs, 1), leaderGrpcAddr: fieldString(fs, 2), leaderHttpAddr: fieldString(fs, 3) };
    case "sepp.v1.UnknownOutcome":
      return { type: name, reason: fieldString(fs, 1) };
    case "google.rpc.BadRequest":
      return {
        type: name,
        fieldViolations: fs
          .filter((f) => f.num === 1 && f.bytes)
          .map((f) => {
            const v = decodeFields(f.bytes!);
            return { field: fieldString(v, 1), description: fieldString(v, 2) };
          }),
      };
    case "google.rpc.PreconditionFailure":
      return {
        type: name,
        violations: fs
          .filter((f) => f.num === 1 && f.bytes)
          .map((f) => {
            const v = decodeFields(f.bytes!);
            return { type: fieldString(v, 1), subject: fieldString(v, 2), description: fieldString(v, 3) };
          }),
      };
    case "google.rpc.ResourceInfo":
      return {
        type: name,
        resourceType: fieldString(fs, 1),
        resourceName: fieldString(fs, 2),
        owner: fieldString(fs, 3),
        description: fieldString(fs, 4),
      };
    case "google.rpc.RetryInfo": {
      const d = fs.find((f) => f.num === 1 && f.bytes);
      const v = d?.bytes ? decodeFields(d.bytes) : [];
      return { type: name, retryDelayMs: Number(fieldInt(v, 1)) * 1000 + Math.floor(Number(fieldInt(v, 2)) / 1e6) };
    }
  }
  return { type: name, value };
}

/** Decodes a detail given in JSON form (google.protobuf.Any in the JSON
 * mapping: {"@type": ..., fields}), as batch items carry them. */
export function detailFromJSON(a: JSONObject): ErrorDetail {
  const name = str(a["@type"]).replace(/^type\.googleapis\.com\//, "");
  switch (name) {
    case "sepp.v1.FieldViolation": {
      const d = message<FieldViolationJSON>(a);
      return { type: name, field: str(d.field), limit: str(d.limit), description: str(d.description) };
    }
    case "sepp.v1.ScheduledTooFar": {
      const d = message<ScheduledTooFarJSON>(a);
      return {
        type: name,
        queue: str(d.queue),
        horizonMs: num(d.horizonMs),
        requestedAt: timeFrom(d.requestedAt),
        latestAllowed: timeFrom(d.latestAllowed),
      };
    }
    case "sepp.v1.NotLeader": {
      const d = message<NotLeaderJSON>(a);
      return { type: name, leaderId: str(d.leaderId), leaderGrpcAddr: str(d.leaderGrpcAddr), leaderHttpAddr: str(d.leaderHttpAddr) };
    }
    case "sepp.v1.UnknownOutcome":
      return { type: name, reason: str(message<UnknownOutcomeJSON>(a).reason) };
    case "google.rpc.BadRequest":
      return {
        type: name,
        fieldViolations: arr(a.fieldViolations).map((v) => ({ field: str(obj(v).field), description: str(obj(v).description) })),
      };
    case "google.rpc.PreconditionFailure":
      return {
        type: name,
        violations: arr(a.violations).map((v) => ({
          type: str(obj(v).type),
          subject: str(obj(v).subject),
          description: str(obj(v).description),
        })),
      };
    case "google.rpc.ResourceInfo":
      return {
        type: name,
        resourceType: str(a.resourceType),
        resourceName: str(a.resourceName),
        owner: str(a.owner),
        description: str(a.description),
      };
  }
  return { type: name, value: new Uint8Array(0) };
}
