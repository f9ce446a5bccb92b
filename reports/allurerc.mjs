// Allure 3 configuration of the LogSoftmaxGrad farm.
//
// farm/results/report_generate.py runs `allure generate` with this file and passes the per-run values through
// environment variables, so that one static file serves every tier and every run:
//   FARM_ALLURE_NAME                report name                 (default "LogSoftmaxGrad farm")
//   FARM_ALLURE_OUTPUT              output directory            (default ./out/latest)
//   FARM_ALLURE_HISTORY             history JSONL, kept beside the run store; unset: no history
//   FARM_ALLURE_HISTORY_LIMIT       history entries kept        (default 30)
//   FARM_ALLURE_ENVIRONMENTS        JSON {family id: environment name}, one environment per family
//   FARM_ALLURE_GLOBAL_ATTACHMENTS  JSON list of files shown as the report's global attachments
//                                   (the regression summary, the triage and the trend plot)
//   FARM_ALLURE_HIDE_LABELS         JSON list of the labels the report does not show
// categories.json and quality-gate.json beside this file are shared with the Python side
// (farm/run/allure_categories.py CATEGORIES, farm/results/gate.py quality_gate).
import { readFileSync } from "node:fs";
// Not from "allure": importing that package runs its command line (generate.mjs reads this file).
import { defineConfig } from "@allurereport/plugin-api";

const env = process.env;
const readJson = (name) => JSON.parse(readFileSync(new URL(`./${name}`, import.meta.url), "utf8"));

// One Allure environment per SoC family, chosen by the `family` label that
// farm.run.allure_glue.annotate() sets. The families and their names come from golden/soc.py
// through FARM_ALLURE_ENVIRONMENTS ({id: name}, see farm/results/report_generate.py).
const FAMILIES = JSON.parse(env.FARM_ALLURE_ENVIRONMENTS || "{}");
const hasLabel = (labels, name, value) => labels.some((l) => l.name === name && l.value === value);
const environments = Object.fromEntries(
  Object.entries(FAMILIES).map(([id, name]) => [
    id,
    { name, matcher: ({ labels }) => hasLabel(labels, "family", id) },
  ]),
);

const globalAttachments = env.FARM_ALLURE_GLOBAL_ATTACHMENTS
  ? JSON.parse(env.FARM_ALLURE_GLOBAL_ATTACHMENTS)
  : [];

export default defineConfig({
  name: env.FARM_ALLURE_NAME || "LogSoftmaxGrad farm",
  output: env.FARM_ALLURE_OUTPUT || "./out/latest",
  ...(env.FARM_ALLURE_HISTORY ? { historyPath: env.FARM_ALLURE_HISTORY } : {}),
  historyLimit: Number(env.FARM_ALLURE_HISTORY_LIMIT || 30),
  environments,
  hideLabels: JSON.parse(env.FARM_ALLURE_HIDE_LABELS || "[]"),
  // Allure 2 style rules (messageRegex/matchedStatuses); Allure 3 reads them as compatibility
  // matchers. Failure messages start with "[<category>] " (farm.run.allure_categories.CATEGORY_PREFIXES).
  categories: { rules: readJson("categories.json") },
  // `allure quality-gate` and `allure run` use this. The report's Quality Gates section shows the
  // farm's gate, evaluated from the same file in farm/results/gate.py and handed to the report
  // by generate.mjs (`allure generate` evaluates none).
  qualityGate: { rules: [readJson("quality-gate.json")] },
  globalAttachments,
  plugins: {
    awesome: {
      options: {
        reportName: env.FARM_ALLURE_NAME || "LogSoftmaxGrad farm",
        reportLanguage: "en",
        // A directory: farm/results/report_single_file.py then makes its index.html the whole
        // report when small enough (it opens from disk), the files kept for tools and serving.
        singleFile: false,
        groupBy: ["feature", "story"],
        // The timeline shows the cases whose test item took a second or more: a nightly run's
        // thousands of quick ones would be most of the report's size (~240 bytes each) and
        // unreadable as bars.
        timeline: { minDuration: 1000 },
      },
    },
  },
});
