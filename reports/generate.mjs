// `node generate.mjs RESULTS_DIR`: the farm's `allure generate RESULTS_DIR -c allurerc.mjs`.
//
// It does what Allure 3's own generate command does (a report from the config and the results
// directory), and one thing more: the farm's quality gate, evaluated in Python from
// quality-gate.json (farm/results/report.py farm_gate: the rules, their values, passed or failed),
// is handed to the report before it is written, the way `allure run` hands over the results of
// the gate it evaluates itself. `allure generate` evaluates no gate at all, and Allure's own
// evaluation needs Node 22 (Iterator helpers); so the report's Quality Gates section shows the
// very verdict that decides `farm report`'s and `farm run`'s exit codes.
//
//   FARM_ALLURE_QUALITY_GATE   a JSON file: a list of Allure quality gate results
//                              ({rule, expected, actual, success, message}); unset: none shown
// The other settings are allurerc.mjs's (FARM_ALLURE_*, see there).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { AllureReport, readConfig } from "@allurereport/core";

const [resultsDir, ...rest] = process.argv.slice(2);
if (!resultsDir || rest.length) {
  console.error("usage: node generate.mjs RESULTS_DIR");
  process.exit(2);
}

try {
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
