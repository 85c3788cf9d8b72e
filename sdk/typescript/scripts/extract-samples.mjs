// Copies every TypeScript sample of the spec pages, verbatim, into
// test/spec-samples/<page>.<n>.ts, where the tests compile and run them
// against a real cluster. Usage: node scripts/extract-samples.mjs SPEC_DIR
//
// A sample starts at a line importing from "sepp" and runs to the blank
// line after which the text stops looking like code (the page's next
// heading or paragraph). tsc then compiles each one, so prose caught by
// mistake fails the build instead of passing unnoticed.
import { readdirSync, readFileSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const specDir = process.argv[2];
if (!specDir) {
  console.error("usage: node scripts/extract-samples.mjs SPEC_DIR");
  process.exit(2);
}
const out = join(dirname(fileURLToPath(import.meta.url)), "..", "test", "spec-samples");
const code = /^(\s|\/\/|\/\*|\*|import |export |const |let |var |await |for |if |else|while |try|catch|function |class |return|throw |[}\])]|[A-Za-z_$][\w$.]*\s*(\(|=|\.|\+\+|--))/;

mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (f.endsWith(".ts")) rmSync(join(out, f));
let total = 0;
for (const page of readdirSync(specDir).filter((f) => f.endsWith(".txt")).sort()) {
  const lines = readFileSync(join(specDir, page), "utf8").split("\n");
  let n = 0;
  for (let i = 0; i < lines.length; i++) {
    if (!/^import .* from "sepp";\s*$/.test(lines[i])) continue;
    let j = i;
    let end = i;
    for (; j < lines.length; j++) {
      if (lines[j].trim() === "") {
        const next = lines.slice(j + 1).find((l) => l.trim() !== "");
        if (next === undefined || !code.test(next)) break;
        continue;
      }
      if (!code.test(lines[j]) && j !== i) break;
      end = j;
    }
    const sample = lines.slice(i, end + 1).join("\n") + "\n";
    n++;
    total++;
    const name = `${page.replace(/\.txt$/, "")}.${n}.ts`;
    writeFileSync(join(out, name), sample);
    console.log(`${name}: ${end - i + 1} lines`);
    i = end;
  }
}
console.log(`${total} samples`);
