"""The run-level files of an allure-results directory (`write_results_extras`): Allure's
categories (farm/run/allure/categories.py), environment.properties (the report's Metadata: the
run, its package and target, its hosts) and executor.json (the CI that ran it)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from farm.run.allure.categories import CATEGORIES

# The operator the allure-results are of: every case's `epic` label (farm/run/allure/glue.py)
# and the environment's "operator".
EPIC = "LogSoftmaxGrad"
# The label whose value (the SoC family) selects a case's Allure 3 environment
# (reports/allurerc.mjs).
ENVIRONMENT_LABEL = "family"


def properties_text(props: Mapping[str, str]) -> str:
    """environment.properties: one `key=value` line each, in order (the report's Metadata)."""
    return "".join(f"{_props_escape(k, key=True)}={_props_escape(v)}\n" for k, v in props.items())


def _props_escape(s: str, key: bool = False) -> str:
    out = []
    for ch in str(s):
        if ch in "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif key and ch in " =:#!":
            out.append("\\" + ch)
        elif ord(ch) > 0x7E or ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def environment_properties(run_meta: Mapping) -> dict[str, str]:
    """environment.properties of a run: the report's Metadata (its run, package, target and
    hosts)."""
    from farm.pool.build import describe
    from farm.run.metadata import inventory_list, planted_bug

    pkg = run_meta.get("package") or {}
    target = run_meta.get("target") or pkg.get("target")
    props = {
        "operator": EPIC,
        "run.id": run_meta.get("run_id"),
        "run.tier": run_meta.get("tier"),
        "run.cases": run_meta.get("label"),
        "package.version": run_meta.get("package_version") or pkg.get("version"),
        "package.sha256": run_meta.get("package_sha256") or pkg.get("sha256"),
        # farm run --plant-bug: its failures are the bug's, a test of the farm
        "package.planted_bug": planted_bug(run_meta),
        # e.g. "ascendc-cpu (the real Ascend C kernel on the CPU emulation)"
        "target": describe(target) if target else None,
        "backend": run_meta.get("backend"),
        "git.commit": run_meta.get("git_commit"),
        "farm.version": run_meta.get("farm_version"),
    }

    for h in inventory_list(run_meta.get("inventory")):
        desc = str(h.get("soc") or "?")
        if h.get("family"):
            desc += f" ({h['family']})"
        props[f"host.{h.get('name')}"] = desc
    return {k: str(v) for k, v in props.items() if v not in (None, "")}


def executor_info(run_meta: Mapping | None = None, env: Mapping | None = None) -> dict:
    """executor.json from the CI's variables (GitHub Actions, GitLab, Jenkins), else local."""
    env = os.environ if env is None else env
    run_meta = run_meta or {}
    name = run_meta.get("run_id") or "farm run"
    if env.get("GITHUB_ACTIONS") or env.get("GITHUB_RUN_ID"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        repo = env.get("GITHUB_REPOSITORY", "")
        run_url = f"{server}/{repo}/actions/runs/{env.get('GITHUB_RUN_ID', '')}"
        return {
            "name": "GitHub Actions",
            "type": "github",
            "url": f"{server}/{repo}",
            "buildOrder": _int(env.get("GITHUB_RUN_NUMBER")),
            "buildName": f"{env.get('GITHUB_WORKFLOW', 'workflow')} #"
            f"{env.get('GITHUB_RUN_NUMBER', '')} ({name})",
            "buildUrl": run_url,
            "reportName": f"LogSoftmaxGrad farm {name}",
        }
    if env.get("GITLAB_CI") or env.get("CI_JOB_URL") or env.get("CI_PIPELINE_ID"):
        return {
            "name": "GitLab CI",
            "type": "gitlab",
            "url": env.get("CI_PROJECT_URL", ""),
            "buildOrder": _int(env.get("CI_PIPELINE_IID") or env.get("CI_PIPELINE_ID")),
            "buildName": f"{env.get('CI_JOB_NAME', 'job')} #{env.get('CI_JOB_ID', '')} ({name})",
            "buildUrl": env.get("CI_JOB_URL") or env.get("CI_PIPELINE_URL", ""),
            "reportName": f"LogSoftmaxGrad farm {name}",
        }
    if env.get("BUILD_URL") or env.get("JENKINS_URL"):
        return {
            "name": "Jenkins",
            "type": "jenkins",
            "url": env.get("JENKINS_URL", ""),
            "buildOrder": _int(env.get("BUILD_NUMBER")),
            "buildName": f"{env.get('JOB_NAME', 'job')} #{env.get('BUILD_NUMBER', '')} ({name})",
            "buildUrl": env.get("BUILD_URL", ""),
            "reportName": f"LogSoftmaxGrad farm {name}",
        }
    ci = "CI" if env.get("CI") else "local"
    return {
        "name": ci,
        "type": ci.lower(),
        "buildName": str(name),
        "reportName": f"LogSoftmaxGrad farm {name}",
    }


def _int(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def write_results_extras(results_dir: str | os.PathLike, run_meta: Mapping) -> list[Path]:
    """Write categories.json, environment.properties and executor.json into results_dir."""
    d = Path(results_dir)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    p = d / "categories.json"
    p.write_text(json.dumps(CATEGORIES, indent=2) + "\n", encoding="utf-8")
    written.append(p)
    p = d / "environment.properties"
    p.write_text(properties_text(environment_properties(run_meta)), encoding="utf-8")
    written.append(p)
    p = d / "executor.json"
    info = {k: v for k, v in executor_info(run_meta).items() if v not in (None, "")}
    p.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    written.append(p)
    return written
