// `node generate.mjs RESULTS_DIR`: the farm's `allure generate RESULTS_DIR -c allurerc.mjs`.
//
// It does what Allure 3's own generate command does (a report from the config and the results
// directory), and one thing more: the farm's quality gate, evaluated in Python from
// quality-gate.json (farm/results/gate.py farm_gate: the rules, their values, passed or failed),
// is handed to the report before it is written, the way `allure run` hands over the results of
// the gate it evaluates itself. `allure generate` evaluates no gate at all, and Allure's own
// evaluation needs Node 22 (Iterator helpers); so the report's Quality Gates section shows the
// very verdict that decides `farm report`'s and `farm run`'s exit codes.
//
//   FARM_ALLURE_QUALITY_GATE   a JSON file: a list of Allure quality gate results
//                              ({rule, expected, actual, success, message}); unset: none shown
// The other settings are allurerc.mjs's (FARM_ALLURE_*, see there).
//
// `node generate.mjs --stdin`: the same, started before its results exist (`farm run` starts it
// with its cases, farm/run/allure_process.py AllureProcess): Allure's modules are loaded at once (more
// than a second of CPU, while the machine waits for the first cases), then one JSON line on stdin
// says what to do: {"results": RESULTS_DIR, "env": {NAME: VALUE, ...}} (the FARM_ALLURE_* settings,
// set before allurerc.mjs is read). End of input without a line: exit 0, nothing written.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const [first, ...rest] = process.argv.slice(2);
if (!first || rest.length) {
  console.error("usage: node generate.mjs RESULTS_DIR | node generate.mjs --stdin");
  process.exit(2);
}

try {
  const core = import("@allurereport/core");
  // allurerc.mjs's plugin, loaded now: readConfig then finds it in the module cache.
  const awesome = import("@allurereport/plugin-awesome");
  // A failed import is reported below, where it is awaited, not as an unhandled rejection while
  // the request is read.
  core.catch(() => {});
  awesome.catch(() => {});
  let resultsDir = first;
  if (first === "--stdin") {
    const line = await firstLine(process.stdin);
    if (line === null) process.exit(0);
    const request = JSON.parse(line);
    resultsDir = request.results;
    for (const [name, value] of Object.entries(request.env ?? {})) {
      if (value === null) delete process.env[name];
      else process.env[name] = String(value);
    }
  }
  const { AllureReport, readConfig } = await core;
  await awesome;
  const here = fileURLToPath(new URL(".", import.meta.url));
  const config = await readConfig(here, fileURLToPath(new URL("./allurerc.mjs", import.meta.url)));
  const report = new AllureReport(config);
  await report.start();
  await report.readDirectory(resultsDir);
  const gateFile = process.env.FARM_ALLURE_QUALITY_GATE;
  if (gateFile) {
    report.realtimeDispatcher.sendQualityGateResults(JSON.parse(readFileSync(gateFile, "utf8")));
  }
  await report.done();
} catch (error) {
  console.error(`farm's allure generate failed: ${error?.stack ?? error}`);
  process.exit(1);
}

// The first line of a stream (without its newline), or null at its end without one.
async function firstLine(stream) {
  let text = "";
  for await (const chunk of stream) {
    text += chunk;
    const end = text.indexOf("\n");
    if (end >= 0) return text.slice(0, end);
  }
  return text ? text : null;
}
