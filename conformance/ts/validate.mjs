// Validates every event of a JSON-lines file against the installed session-events schema:
// `node conformance/ts/validate.mjs FILE`. Prints PASS/FAIL; exits 1 on the first bad event.

import { readFileSync } from "node:fs";
import { checkSchema } from "./harness.mjs";

const file = process.argv[2];
const lines = readFileSync(file, "utf8").split("\n").filter((l) => l.trim().length > 0);
try {
  lines.forEach((line, i) => checkSchema(JSON.parse(line), `${file}:${i + 1}`));
  console.log(`PASS schema: ${lines.length} events of ${file} match session-events.schema.json`);
} catch (e) {
  console.log(`FAIL schema: ${e.message}`);
  process.exit(1);
}
