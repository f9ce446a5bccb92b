"""The CI recipes (.ci/examples) and the pre-commit hooks hold what they promise.

Each recipe is parsed (YAML with yaml.safe_load, the Jenkinsfile with regexes) into its nightly
and pre-merge jobs, and checked against the farm itself: every ``farm`` command against the real
subcommands and options (``farm SUB --help``), the artefact paths against what ``farm run``
writes (taken from farm/run/runner.py, farm/results/run_paths.py and farm/results/store.py, not
written down here), and the exit-code mapping by running the recipes' own shell steps against a
stub ``farm`` that exits 0, 1 or 2. The nightly is sharded: each recipe's CI parallelism (GitHub's
matrix, GitLab's ``parallel:``, Jenkins' matrix) must run shards 1..N of one run group with N its
own size, and a merge job after all of them; the store comes from the CI's secrets and no
credentials are in a recipe. Each checker also gets a broken recipe, to show it can fail.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from farm import cli
from farm.results import run_paths
from farm.results.store import default_location, parse_location
from farm.run import outputs, runner
from farm.run.metadata import new_run_id
from farm.run.plan import Plan
from suites import matrix

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / ".ci" / "examples"
RECIPES = {
    "github": EXAMPLES / "github-actions.yml",
    "gitlab": EXAMPLES / "gitlab-ci.yml",
    "jenkins": EXAMPLES / "Jenkinsfile",
}
OP_FILE, OTHER_FILE = "op/tiling/tiling.cpp", "README.md"  # a change to op/, and one elsewhere
# farm run's exit code -> what CI must make of it.
WANTED = {0: "success", 1: "failure", 2: "unstable"}


# -- what farm run writes, from the code ----------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """Paths relative to the repository root, where the recipes run farm."""

    run_id: str
    run_dir: str
    junit: str
    summary: str
    report: str
    allure_results: str
    store: str


def default_runs_dir() -> Path:
    """farm.util.paths.RUNS_DIR as farm computes it when FARM_RUNS is unset (the recipes leave
    it)."""
    env = {k: v for k, v in os.environ.items() if k != "FARM_RUNS"}
    code = "from farm.util import paths; print(paths.RUNS_DIR)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Written:
    def rel(path: Path, root: Path) -> str:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()

    run_id = new_run_id("nightly")
    run_dir = default_runs_dir() / run_id
    plan = Plan(run_id, run_dir, "nightly", "native", inventory={}, slots=[], hosts={})
    args = runner.pytest_args(plan, 1, [])
    junit = Path(args[args.index("--junitxml") + 1])
    report_dir = run_paths.default_report_dir(
        {"run_id": run_id, "run_dir": str(run_dir)}, parse_location("x")
    )
    scratch = tmp_path_factory.mktemp("run") / run_id
    scratch.mkdir()
    summary = outputs.write_summary(
        Plan(run_id, scratch, "nightly", "native", inventory={}, slots=[], hosts={}), [], 0, {}
    )
    results = Path(args[args.index("--alluredir") + 1])
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("FARM_STORE", raising=False)
        mp.chdir(REPO)
        store = REPO / default_location().spec
    return Written(
        run_id=run_id,
        run_dir=rel(run_dir, REPO),
        junit=rel(junit, REPO),
        summary=f"{rel(run_dir, REPO)}/{summary.relative_to(scratch).as_posix()}",
        report=rel(report_dir, REPO),
        allure_results=rel(results, REPO),
        store=rel(store, REPO),
    )


def test_what_farm_run_writes_is_where_the_recipes_look(written):
    """The recipes' comments and globs assume runs/<run id>/ and runs/farm.sqlite: so does farm."""
    assert written.run_dir == f"runs/{written.run_id}"
    assert written.store == "runs/farm.sqlite"
    assert written.allure_results == f"runs/{written.run_id}/allure-results"
    assert fnmatch.fnmatch(written.junit, "runs/*/junit.xml")
    assert fnmatch.fnmatch(written.summary, "runs/*/summary.json")
    assert fnmatch.fnmatch(written.report, "runs/*/report")


# -- checking farm command lines ------------------------------------------------------------------


@cache
def farm_help(*words: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.main([*words, "--help"])
    return out.getvalue()


def usage_of(*words: str) -> str:
    return farm_help(*words).split("\n\n", 1)[0]


@cache
def subcommands_of(sub: str) -> frozenset[str]:
    """The choices of a positional in `farm SUB --help`'s usage (`[{prune}]`, `{set,show}`):
    farm SUB's own subcommands, whose options are theirs (`farm SUB WORD --help`)."""
    found = re.findall(r"(--?[\w-]+\s+)?\[?\{([^}]*)\}", usage_of(sub))
    return frozenset(w for option, words in found if not option for w in words.split(","))


@cache
def options_of(*words: str) -> dict[str, object]:
    """The options in `farm WORDS --help`'s usage: None for a flag, a frozenset of choices, or
    "VALUE" for any value."""
    usage = usage_of(*words)
    pattern = r"(?<![\w-])(--?[A-Za-z][\w-]*)(?:\s+(\{[^}]*\}|[A-Z][A-Z0-9_]*)(?=[\]\s|]))?"
    options: dict[str, object] = {}
    for name, arg in re.findall(pattern, usage):
        if not arg:
            options[name] = None
        elif arg.startswith("{"):
            options[name] = frozenset(arg[1:-1].split(","))
        else:
            options[name] = "VALUE"
    return options


def farm_command_problems(words: list[str]) -> list[str]:
    """Why `farm WORDS` is not a real farm command line ([] when it is). Words that the shell
    expands ($VAR, "$@") stand for anything."""
    if not words:
        return ["farm without a subcommand"]
    sub, rest = words[0], words[1:]
    if sub not in cli.COMMANDS:
        return [f"farm has no subcommand {sub!r} (it has {', '.join(cli.COMMANDS)})"]
    problems = []
    if rest and rest[0] in subcommands_of(sub):
        sub, rest = f"{sub} {rest[0]}", rest[1:]
    elif subcommands_of(sub) and rest and not rest[0].startswith(("-", "$")):
        problems.append(f"farm {sub} has no subcommand {rest[0]!r}")
    options = options_of(*sub.split())
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if word == "--":
            break
        if word.startswith("$") or not word.startswith("-"):
            continue
        name, eq, value = word.partition("=")
        if name not in options:
            problems.append(f"farm {sub} has no option {name}")
            continue
        kind = options[name]
        if kind is None:
            if eq:
                problems.append(f"farm {sub} {name} takes no value")
            continue
        if not eq:
            if i == len(rest):
                problems.append(f"farm {sub} {name} needs a value")
                continue
            value = rest[i]
            i += 1
        if value.startswith("$"):
            continue
        if isinstance(kind, frozenset) and value not in kind:
            problems.append(f"farm {sub} {name} {value}: not one of {sorted(kind)}")
        if name == "--tier" and value not in matrix.TIERS:
            problems.append(f"farm {sub} --tier {value}: not a tier ({', '.join(matrix.TIERS)})")
    return problems


SEPARATORS = {";", "&", "&&", "|", "||", "(", ")", ";;"}
PREFIXES = {"if", "then", "else", "elif", "do", "while", "until", "!", "exec", "time", "{", "}"}


def farm_commands(script: str) -> list[list[str]]:
    """Every farm invocation in a shell script: the words after `farm` or `<dir>/farm`."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        command: list[str] = []
        for word in [*lexer, ";"]:
            if word not in SEPARATORS:
                command.append(word)
                continue
            while command and (command[0] in PREFIXES or re.match(r"\w+=", command[0])):
                command.pop(0)
            if command and (command[0] == "farm" or command[0].endswith("/farm")):
                found.append(command[1:])
            command = []
    return found


def ci_scripts_referenced(script: str) -> list[str]:
    return re.findall(r"\b(?:bash|sh)\s+(\.ci/[\w./-]+\.sh)\b", script)


# -- the recipes as jobs --------------------------------------------------------------------------


@dataclass
class Job:
    scripts: list[str]  # its shell scripts, in order
    scheduled: bool  # runs on a schedule
    on_op_change: bool  # runs on a change to op/ (and not on a change elsewhere)
    # the job as parsed: a YAML mapping (GitHub, GitLab) or a Groovy stage block (Jenkins)
    raw: dict[str, Any] | str = field(repr=False)

    @property
    def doc(self) -> dict[str, Any]:
        """The job's YAML mapping (GitHub, GitLab)."""
        assert isinstance(self.raw, dict), "a Jenkins job is Groovy, not YAML"
        return self.raw

    @property
    def groovy(self) -> str:
        """The job's Groovy stage block (Jenkins)."""
        assert isinstance(self.raw, str), "a GitHub or GitLab job is YAML, not Groovy"
        return self.raw

    def farm_runs(self) -> list[list[str]]:
        return [c for s in self.scripts for c in farm_commands(s) if c[:1] == ["run"]]

    def farm_merges(self) -> list[list[str]]:
        return [c for s in self.scripts for c in farm_commands(s) if c[:1] == ["merge"]]

    def farm_script(self) -> str:
        """The one script that runs `farm run` or `farm merge`: the job's verdict."""
        (script,) = [s for s in self.scripts if runs_farm(s)]
        return script

    def prunes(self) -> list[tuple[int, list[str]]]:
        """(index of the script, the command) of every `farm runs prune`."""
        return [
            (i, c)
            for i, s in enumerate(self.scripts)
            for c in farm_commands(s)
            if c[:2] == ["runs", "prune"]
        ]

    def tiers(self) -> set[str]:
        return {c[c.index("--tier") + 1] for c in self.farm_runs() if "--tier" in c}


def runs_farm(script: str) -> bool:
    """Whether the script runs `farm run` or `farm merge` (whose exit code is the verdict)."""
    return any(c[:1] in (["run"], ["merge"]) for c in farm_commands(script))


def github_on(doc: dict) -> dict:
    return doc.get("on", doc.get(True)) or {}  # YAML 1.1 reads a bare `on` as True


def github_jobs(text: str) -> dict[str, Job]:
    doc = yaml.safe_load(text)
    on = github_on(doc)
    crons = [c.get("cron", "") for c in on.get("schedule") or []]
    pr_paths = (on.get("pull_request") or {}).get("paths", [])
    jobs = {}
    for name, job in doc["jobs"].items():
        cond = job.get("if", "")
        jobs[name] = Job(
            scripts=[s["run"] for s in job["steps"] if "run" in s],
            scheduled="'schedule'" in cond and any(len(c.split()) == 5 for c in crons),
            on_op_change="'pull_request'" in cond and paths_select_op(pr_paths),
            raw=job,
        )
    return jobs


def gitlab_resolved(doc: dict, name: str) -> dict:
    job = dict(doc[name])
    for base in reversed(
        [job["extends"]] if isinstance(job.get("extends"), str) else job.get("extends", [])
    ):
        job = {**gitlab_resolved(doc, base), **job}
    return job


def gitlab_jobs(text: str) -> dict[str, Job]:
    doc = yaml.safe_load(text)
    jobs = {}
    for name in doc:
        if name.startswith(".") or not isinstance(doc[name], dict) or "script" not in doc[name]:
            continue
        job = gitlab_resolved(doc, name)
        rules = job.get("rules", [])
        scheduled = any('$CI_PIPELINE_SOURCE == "schedule"' in r.get("if", "") for r in rules)
        on_op = False
        for rule in rules:
            changes = rule.get("changes", [])
            paths = changes.get("paths", []) if isinstance(changes, dict) else changes
            mr = '$CI_PIPELINE_SOURCE == "merge_request_event"' in rule.get("if", "")
            on_op = on_op or (mr and paths_select_op(paths))
        scripts = [
            "\n".join(job.get(part, [])) for part in ("before_script", "script", "after_script")
        ]
        jobs[name.removeprefix("farm:")] = Job(scripts, scheduled, on_op, raw=job)
    return jobs


def groovy_block(text: str, opening: str) -> str:
    """The text between the brace that ends the first match of `opening` and its partner,
    skipping braces inside string literals and // comments."""
    match = re.search(opening, text)
    assert match, f"no {opening!r}"
    i, depth, start = match.end(), 1, match.end()
    while depth:
        if text.startswith("//", i):
            i = text.index("\n", i)
            continue
        for quote in ("'''", '"""', "'", '"'):
            if text.startswith(quote, i):
                i = text.index(quote, i + len(quote)) + len(quote)
                break
        else:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
    return text[start : i - 1]


SH_STEP = re.compile(
    r"\bsh\s*\(?\s*(?:\w+\s*:\s*\w+\s*,\s*)*(?:script\s*:\s*)?(?P<q>'''|\"\"\"|'|\")(?P<body>.*?)(?P=q)",
    re.S,
)


def sh_scripts(groovy: str) -> list[str]:
    return [m["body"] for m in SH_STEP.finditer(groovy)]


def jenkins_jobs(text: str) -> dict[str, Job]:
    triggers = groovy_block(text, r"\btriggers\s*\{")
    crons = re.findall(r"'([^']*)'", " ".join(re.findall(r"cron\((.*?)\)\s*$", triggers, re.M)))
    setup = groovy_block(text, r"stage\('set-up'\)\s*\{")
    jobs = {}
    for name in re.findall(r"stage\('([\w-]+)'\)", text):
        if name == "set-up":
            continue
        block = groovy_block(text, rf"stage\('{name}'\)\s*\{{")
        when = groovy_block(block, r"\bwhen\s*\{")
        changesets = re.findall(r"changeset\s+'([^']+)'", when)
        jobs[name] = Job(
            scripts=sh_scripts(setup) + sh_scripts(block),
            scheduled="triggeredBy 'TimerTrigger'" in when
            and any(len(c.split()) == 5 for c in crons),
            on_op_change="changeRequest()" in when and paths_select_op(changesets),
            raw=block,
        )
    return jobs


def paths_select_op(patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(OP_FILE, p) for p in patterns) and not any(
        fnmatch.fnmatch(OTHER_FILE, p) for p in patterns
    )


PARSERS = {"github": github_jobs, "gitlab": gitlab_jobs, "jenkins": jenkins_jobs}


def text_of(kind: str) -> str:
    return RECIPES[kind].read_text()


def recipe_problems(kind: str, text: str) -> list[str]:
    """Every farm command and every .ci script a recipe uses must exist, as written."""
    jobs = PARSERS[kind](text)
    problems = []
    commands = [c for job in jobs.values() for s in job.scripts for c in farm_commands(s)]
    if not commands:
        problems.append("no farm command at all")
    for command in commands:
        problems += farm_command_problems(command)
    for job in jobs.values():
        for script in job.scripts:
            for path in ci_scripts_referenced(script):
                if not (REPO / path).is_file():
                    problems.append(f"{path} does not exist")
    return problems


# -- running a recipe's shell steps against a stub farm ------------------------------------------

STUB = """#!/bin/sh
printf '%s\\n' "$@" > "$STUB_ARGS"
mkdir -p "$STUB_RUN_DIR" && : > "$STUB_SUMMARY"
mkdir -p runs/state runs/hosts
echo "run_id=${STUB_RUN_ID:-$(basename "$STUB_RUN_DIR")}"
exit "$STUB_EXIT"
"""


@dataclass
class Sandbox:
    root: Path
    written: Written

    def run(self, script: str, code: int, shell: list[str], env: dict | None = None):
        """Run `script` in a checkout-like directory whose .venv/bin/farm exits `code`, after an
        older run directory. Returns (exit status, farm's argv or None)."""
        args = self.root / "farm-args"
        args.unlink(missing_ok=True)
        full_env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root),
            "STUB_ARGS": str(args),
            "STUB_RUN_DIR": self.written.run_dir,
            "STUB_SUMMARY": self.written.summary,
            "STUB_EXIT": str(code),
            **(env or {}),
        }
        proc = subprocess.run(
            [*shell, script], cwd=self.root, env=full_env, capture_output=True, text=True
        )
        farm_args = args.read_text().splitlines() if args.exists() else None
        return proc.returncode, farm_args


@pytest.fixture
def sandbox(tmp_path, written) -> Sandbox:
    stub = tmp_path / ".venv" / "bin" / "farm"
    stub.parent.mkdir(parents=True)
    stub.write_text(STUB)
    stub.chmod(0o755)
    older = tmp_path / "runs" / new_run_id("smoke").replace("smoke", "older")
    older.mkdir(parents=True)
    (older / Path(written.summary).name).write_text("{}")
    os.utime(older / Path(written.summary).name, (1e9, 1e9))
    return Sandbox(tmp_path, written)


GH_SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]  # `shell: bash`
GL_SHELL = ["bash", "-eo", "pipefail", "-c"]  # GitLab Runner's bash
JK_SHELL = ["sh", "-e", "-c"]  # Jenkins `sh`


def gh_expand(value: str, context: dict[str, str]) -> str:
    """GitHub `${{ a.b.c }}` expressions that are plain lookups, from `context` ('' if absent)."""
    return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: context.get(m[1], ""), str(value))


def gh_farm_step(job: dict) -> dict:
    (step,) = [s for s in job["steps"] if runs_farm(s.get("run", ""))]
    return step


def gh_outcome(
    job: dict,
    sandbox: Sandbox,
    code: int,
    secrets: dict | None = None,
    context: dict | None = None,
    env: dict | None = None,
) -> dict:
    """Run the job's farm step and verdict step as GitHub would; the job's outcome. ``context``:
    more of GitHub's expressions (matrix.shard, ...); ``env``: GitHub's own variables."""
    step = gh_farm_step(job)
    outputs = sandbox.root / "github-output"
    outputs.write_text("")
    context = {**{f"secrets.{k}": v for k, v in (secrets or {}).items()}, **(context or {})}
    base = dict(env or {})
    env = {k: gh_expand(v, context) for k, v in step.get("env", {}).items()}
    env.update(base, GITHUB_OUTPUT=str(outputs), RUNNER_TEMP=str(sandbox.root))
    status, farm_args = sandbox.run(step["run"], code, GH_SHELL, env)
    out = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in out.items()})
    result = {"farm_step_status": status, "farm_args": farm_args, "outputs": out}
    verdicts = [s for s in job["steps"] if "continue-on-error" in s]
    assert len(verdicts) == 1, "one verdict step, with continue-on-error"
    verdict = verdicts[0]
    env = {k: gh_expand(v, context) for k, v in verdict.get("env", {}).items()}
    v_status, _ = sandbox.run(verdict["run"], code, GH_SHELL, env)
    coe = re.fullmatch(
        r"\$\{\{\s*([\w.-]+)\s*==\s*'(\d+)'\s*\}\}", str(verdict["continue-on-error"]).strip()
    )
    assert coe, f"continue-on-error is not `output == 'N'`: {verdict['continue-on-error']}"
    tolerated = context.get(coe[1]) == coe[2]
    if status != 0:
        result["outcome"] = "failure"
    else:
        result["outcome"] = "success" if v_status == 0 else "unstable" if tolerated else "failure"
    return result


def gl_outcome(job: dict, status: int) -> str:
    allowed = (job.get("allow_failure") or {}).get("exit_codes", [])
    allowed = [allowed] if isinstance(allowed, int) else allowed
    return "success" if status == 0 else "unstable" if status in allowed else "failure"


def jenkins_result(text: str, code: int) -> str:
    """What farmVerdict(code) makes of a build: the first step of the branch `code` takes."""
    body = groovy_block(text, r"def farmVerdict\(int code\)\s*\{")
    for cond, branch in re.findall(r"(?:if\s*\(code == (\d+)\)|else)\s*\{(.*?)\}", body, re.S):
        if cond == "" or int(cond) == code:
            step = re.search(r"\b(echo|unstable|error)\b", branch)
            assert step, f"farmVerdict's branch for {code} takes no step: {branch}"
            return {"echo": "success", "unstable": "unstable", "error": "failure"}[step[1]]
    return "success"


# -- the tests -------------------------------------------------------------------------------------


MERGE = "nightly-merge"


@pytest.mark.parametrize("kind", RECIPES)
def test_nightly_runs_the_nightly_tier_on_a_schedule(kind):
    jobs = PARSERS[kind](text_of(kind))
    assert jobs["nightly"].scheduled and jobs[MERGE].scheduled
    assert jobs["nightly"].tiers() == {"nightly"}
    assert not jobs["nightly"].on_op_change and not jobs[MERGE].on_op_change
    assert jobs[MERGE].farm_runs() == [] and len(jobs[MERGE].farm_merges()) == 1


def farm_mutates(job: Job) -> list[list[str]]:
    return [c for s in job.scripts for c in farm_commands(s) if c[:1] == ["mutate"]]


WEEKLY = {
    # How each recipe tells the weekly schedule from the nightly one (the nightly jobs skip it).
    "github": ("github.event.schedule == '0 4 * * 0'", "github.event.schedule != '0 4 * * 0'"),
    "gitlab": ('$FARM_MUTATE == "1"', '$FARM_MUTATE != "1"'),
    "jenkins": ("format('u') == '7'", None),  # Sundays: the nightly runs then too
}


@pytest.mark.parametrize("kind", RECIPES)
def test_farm_mutate_runs_weekly_on_the_nightly_tier_and_nothing_else_does(kind):
    jobs = PARSERS[kind](text_of(kind))
    mutate = jobs["mutate"]
    assert mutate.scheduled and not mutate.on_op_change
    ((command),) = farm_mutates(mutate)
    assert command[command.index("--tier") + 1] == "nightly"
    assert "--min-score" in command
    assert [name for name, job in jobs.items() if farm_mutates(job)] == ["mutate"]
    weekly, not_weekly = WEEKLY[kind]
    assert weekly in str(mutate.raw)
    if not_weekly:
        assert not_weekly in str(jobs["nightly"].raw) and not_weekly in str(jobs[MERGE].raw)
        assert weekly not in str(jobs["nightly"].raw)
    if kind == "github":
        crons = [c["cron"] for c in github_on(yaml.safe_load(text_of(kind)))["schedule"]]
        assert "0 4 * * 0" in crons and crons.count("0 4 * * 0") == 1


@pytest.mark.parametrize("kind", RECIPES)
def test_pre_merge_runs_the_smoke_tier_on_a_change_to_op(kind):
    jobs = PARSERS[kind](text_of(kind))
    assert jobs["pre-merge"].on_op_change
    assert jobs["pre-merge"].tiers() == {"smoke"}
    assert not jobs["pre-merge"].scheduled


def test_triggers_are_checked():
    text = text_of("github").replace('paths: ["op/**"]', 'paths: ["**"]')
    assert not github_jobs(text)["pre-merge"].on_op_change
    text = text_of("gitlab").replace('"schedule"', '"web"')
    assert not gitlab_jobs(text)["nightly"].scheduled
    text = text_of("jenkins").replace("changeset 'op/**'", "changeset 'docs/**'")
    assert not jenkins_jobs(text)["pre-merge"].on_op_change


@pytest.mark.parametrize("kind", RECIPES)
def test_every_farm_command_and_ci_script_is_real(kind):
    text = text_of(kind)
    assert recipe_problems(kind, text) == []
    for job in PARSERS[kind](text).values():
        assert any("bash .ci/setup.sh run" in s for s in job.scripts), "set-up by .ci/setup.sh run"


@pytest.mark.parametrize("kind", RECIPES)
@pytest.mark.parametrize(
    ("right", "wrong", "why"),
    [
        ("farm run --tier", "farm rnu --tier", "no subcommand 'rnu'"),
        ("farm run --tier", "farm run --teir", "no option --teir"),
        ("--no-progress", "--no-progres", "no option --no-progres"),
        ("--tier smoke", "--tier smok", "--tier smok: not a tier"),
        ("bash .ci/setup.sh", "bash .ci/setpu.sh", ".ci/setpu.sh does not exist"),
        ("runs prune --keep", "runs prune --kep", "farm runs prune has no option --kep"),
        ("runs prune --keep", "runs prnue --keep", "farm runs has no subcommand 'prnue'"),
        ("--run-group", "--run-grop", "no option --run-grop"),
        ("--runs-dir", "--run-dir", "farm merge has no option --run-dir"),
    ],
)
def test_the_command_checker_catches_a_misspelt_recipe(kind, right, wrong, why):
    text = text_of(kind)
    assert right in text
    problems = recipe_problems(kind, text.replace(right, wrong))
    assert any(why in p for p in problems), problems


@pytest.mark.parametrize("kind", RECIPES)
def test_the_merge_prunes_the_store_after_it(kind):
    """The store only grows unless CI prunes it: the nightly's merge job prunes by count and by
    age, after farm merge (the index of the script, in the order the job runs them); no shard
    prunes (a prune while other shards still run would race them)."""
    jobs = PARSERS[kind](text_of(kind))
    ((at, prune),) = jobs[MERGE].prunes()
    assert "--keep" in prune and "--older-than" in prune and "--dry-run" not in prune
    merged_at = jobs[MERGE].scripts.index(jobs[MERGE].farm_script())
    assert merged_at < at, "after the merge"
    assert jobs["nightly"].prunes() == []


def test_every_recipe_prunes_to_the_same_retention():
    retentions = {kind: PARSERS[kind](text_of(kind))[MERGE].prunes()[0][1][2:] for kind in RECIPES}
    assert len({tuple(r) for r in retentions.values()}) == 1, retentions


def test_github_prunes_whatever_the_verdict(sandbox):
    steps = github_jobs(text_of("github"))[MERGE].doc["steps"]
    (prune,) = [s for s in steps if "farm runs prune" in s.get("run", "")]
    assert prune["if"] == "always()", "after a failing merge too"
    assert steps.index(gh_farm_step({"steps": steps})) < steps.index(prune)
    status, farm_args = sandbox.run(prune["run"], 2, GH_SHELL)
    assert farm_args[:2] == ["runs", "prune"]
    assert status == 0, "a prune that fails warns; the run's verdict is the verdict step's"


def test_gitlab_prunes_in_after_script():
    """GitLab runs after_script whatever the script's verdict and ignores its exit code."""
    job = gitlab_jobs(text_of("gitlab"))[MERGE]
    ((at, _),) = job.prunes()
    assert job.scripts[at] == "\n".join(job.doc["after_script"])


def test_jenkins_prunes_in_post_always_without_changing_the_build(sandbox):
    job = jenkins_jobs(text_of("jenkins"))[MERGE]
    always = groovy_block(job.groovy, r"\balways\s*\{")
    (script,) = [s for s in sh_scripts(always) if "runs prune" in s]
    assert re.search(r"sh\(returnStatus: true, script: '" + re.escape(script), always)
    status, farm_args = sandbox.run(script, 2, JK_SHELL)
    assert (
        farm_args[:2] == ["runs", "prune"] and status == 2
    )  # returnStatus keeps it from the build


def test_the_option_checker_knows_choices_and_flags():
    assert farm_command_problems(["run", "--backend", "cuda"]) != []
    assert farm_command_problems(["run", "--no-report=yes"]) != []
    assert farm_command_problems(["run", "--tier"]) != []
    assert farm_command_problems(["cases", "--tier", "full", "--summary"]) == []
    assert farm_command_problems(["run", "--tier=nightly", "--", "-k", "bf16"]) == []
    assert farm_command_problems(["runs", "prune", "--keep", "3", "--dry-run"]) == []
    assert farm_command_problems(["runs", "--keep", "3"]) != []  # prune's option, not runs'
    assert farm_command_problems(["baseline", "show", "--tier", "smoke"]) == []


def verdict_jobs(jobs: dict[str, Job]) -> dict[str, Job]:
    """The jobs whose verdict is farm run's or farm merge's (not the weekly farm mutate)."""
    return {name: job for name, job in jobs.items() if any(map(runs_farm, job.scripts))}


def test_github_exit_codes_and_run_directory(sandbox, written):
    for name, job in verdict_jobs(github_jobs(text_of("github"))).items():
        for code, wanted in WANTED.items():
            got = gh_outcome(job.doc, sandbox, code)
            assert got["farm_step_status"] == 0, (name, code, "the farm step must not fail")
            assert got["outputs"]["exit_code"] == str(code)
            assert got["outputs"]["run_dir"] == written.run_dir, "the run farm said"
            assert got["outcome"] == wanted, (name, code)


def older_run(sandbox: Sandbox) -> str:
    """The sandbox's run directory that is not the newest one (the one farm names here)."""
    (older,) = [p for p in (sandbox.root / "runs").iterdir() if "older" in p.name]
    return older.name


def test_github_takes_the_run_directory_farm_names_not_the_newest(sandbox, written):
    """farm run's and farm merge's last line, run_id=<id>, names the run directory: a recipe that
    took the newest directory under runs/ (ls -td) would take the one farm did not name."""
    older = older_run(sandbox)
    for name, job in verdict_jobs(github_jobs(text_of("github"))).items():
        got = gh_outcome(job.doc, sandbox, 0, env={"STUB_RUN_ID": older})
        assert got["outputs"]["run_dir"] == f"runs/{older}", name


GUESSES = re.compile(r"\bls\s+(?:-\w+\s+)*-\w*t\w*\b")  # ls -td, ls -t -d, ls -1t ...


def guesses_the_run(text: str) -> list[str]:
    """Where a recipe takes a run directory by its time (ls -t) instead of the run_id= line."""
    return [
        f"line {n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if GUESSES.search(line)
    ]


@pytest.mark.parametrize("kind", RECIPES)
def test_no_recipe_guesses_the_run_by_time(kind):
    assert guesses_the_run(text_of(kind)) == []


def test_the_guess_checker_catches_ls_td():
    assert guesses_the_run("x\n  s=$(ls -td runs/*/summary.json | head -1)\n") != []
    assert guesses_the_run("d=$(ls -1 -t runs/)") != []
    assert guesses_the_run("ls -d runs/*/ && ls runs") == []


def test_github_exit_code_checker_fails_a_wrong_mapping(sandbox):
    job = github_jobs(text_of("github"))["nightly"].doc
    verdict = next(s for s in job["steps"] if "continue-on-error" in s)
    verdict["continue-on-error"] = verdict["continue-on-error"].replace("'2'", "'1'")
    assert gh_outcome(job, sandbox, 1)["outcome"] == "unstable"
    assert gh_outcome(job, sandbox, 2)["outcome"] == "failure"


def test_gitlab_exit_codes(sandbox):
    for name, job in verdict_jobs(gitlab_jobs(text_of("gitlab"))).items():
        for code, wanted in WANTED.items():
            status, farm_args = sandbox.run(job.farm_script(), code, GL_SHELL)
            assert farm_args is not None, (name, "farm did not run")
            assert status == code, (name, "the job's status is farm run's")
            assert gl_outcome(job.doc, status) == wanted, (name, code)
    wrong = gitlab_jobs(text_of("gitlab").replace("exit_codes: [2]", "exit_codes: [1]"))
    assert gl_outcome(wrong["nightly"].doc, 1) == "unstable"


def test_jenkins_exit_codes(sandbox):
    text = text_of("jenkins")
    for name, job in verdict_jobs(jenkins_jobs(text)).items():
        script = job.farm_script()
        assert re.search(r"sh\(returnStatus: true, script: ", job.groovy)
        assert "farmVerdict(code)" in job.groovy
        for code, wanted in WANTED.items():
            status, _ = sandbox.run(script, code, JK_SHELL)
            assert status == code, name
            assert jenkins_result(text, status) == wanted, (name, code)
    swapped = text.replace("unstable('farm exit", "error('farm exit")
    assert jenkins_result(swapped, 2) == "failure"


def test_nightly_takes_the_inventory_from_ci_else_the_embedded_pool(sandbox):
    toml = '[[host]]\nname = "a2-01"'
    job = github_jobs(text_of("github"))["nightly"].doc
    assert "--inventory" not in gh_outcome(job, sandbox, 0)["farm_args"]
    args = gh_outcome(job, sandbox, 0, secrets={"FARM_INVENTORY": toml})["farm_args"]
    inventory = Path(args[args.index("--inventory") + 1])
    assert inventory.read_text().rstrip("\n") == toml

    gitlab = gitlab_jobs(text_of("gitlab"))["nightly"].farm_script()
    jenkins = jenkins_jobs(text_of("jenkins"))["nightly"].farm_script()
    for script, shell in ((gitlab, GL_SHELL), (jenkins, JK_SHELL)):
        _, args = sandbox.run(script, 0, shell)
        assert "--inventory" not in args
        _, args = sandbox.run(script, 0, shell, {"FARM_INVENTORY": "/etc/farm/pool.toml"})
        assert args[args.index("--inventory") :][:2] == ["--inventory", "/etc/farm/pool.toml"]


def test_github_publishes_the_run_directory(written):
    for name in ("pre-merge", MERGE):
        job = github_jobs(text_of("github"))[name]
        step = gh_farm_step(job.doc)
        context = {f"steps.{step['id']}.outputs.run_dir": written.run_dir}
        assert {written.junit, written.summary, written.report} <= gh_uploaded(job, context), name


def gh_uploaded(job: Job, context: dict[str, str]) -> set[str]:
    return {
        gh_expand(line, context).strip().rstrip("/")
        for s in job.doc["steps"]
        if str(s.get("uses", "")).startswith("actions/upload-artifact@")
        for line in str(s["with"]["path"]).splitlines()
        if line.strip()
    }


def test_github_shards_hand_their_run_directories_to_the_merge(sandbox, written):
    """Each shard uploads a directory holding <run id>/ (its junit.xml, summary.json and
    allure-results); the merge job downloads every shard's artifact into runs/, where farm
    merge --runs-dir runs looks for runs/<run id>/."""
    jobs = github_jobs(text_of("github"))
    shard, merge = jobs["nightly"].doc, jobs[MERGE].doc
    got = gh_outcome(shard, sandbox, 0, context={"matrix.shard": "1", "strategy.job-total": "4"})
    staged = sandbox.root / "farm-shard" / written.run_id
    assert (staged / "summary.json").is_file(), "the run directory itself is in the artifact"
    upload = next(
        s for s in shard["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")
    )
    assert upload["if"].startswith("always()"), "a failing shard's results are merged too"
    path = gh_expand(upload["with"]["path"], {"runner.temp": str(sandbox.root)}).rstrip("/")
    assert Path(path) == staged.parent, got["outputs"]
    (download,) = [
        s for s in merge["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@")
    ]
    assert download["with"]["path"] == "runs" and download["with"]["merge-multiple"] is True
    names = {
        gh_expand(upload["with"]["name"], {"matrix.shard": str(k)}) for k in shard_values(shard)
    }
    assert all(fnmatch.fnmatch(n, download["with"]["pattern"]) for n in names)
    ((_, *rest),) = jobs[MERGE].farm_merges()
    assert rest[rest.index("--runs-dir") + 1] == download["with"]["path"]


def shard_values(job: dict) -> list[int]:
    return [int(k) for k in job["strategy"]["matrix"]["shard"]]


def test_gitlab_publishes_the_run_directory(written):
    jobs = gitlab_jobs(text_of("gitlab"))
    for name in ("pre-merge", MERGE):
        artifacts = jobs[name].doc["artifacts"]
        assert artifacts["when"] == "always"
        assert fnmatch.fnmatch(written.junit, artifacts["reports"]["junit"]), name
        for path in (written.junit, written.summary, written.report):
            assert any(fnmatch.fnmatch(path, p.rstrip("/")) for p in artifacts["paths"]), path
    # What the header promises: the pre-merge run's comparison with the nightly, as written.
    (compare,) = [
        c for s in jobs["pre-merge"].scripts for c in farm_commands(s) if c[:1] == ["compare"]
    ]
    output = compare[compare.index("--output") + 1].replace("$run_id", written.run_id)
    assert output == f"{written.run_dir}/compare-nightly.md"
    assert any(fnmatch.fnmatch(output, p) for p in jobs["pre-merge"].doc["artifacts"]["paths"])
    shard = jobs["nightly"].doc["artifacts"]
    assert shard["when"] == "always", "a failing shard's results are merged too"
    for path in (written.junit, written.summary, written.allure_results):
        assert any(fnmatch.fnmatch(path, p.rstrip("/")) for p in shard["paths"]), path
    assert "reports" not in shard, "the pipeline's test report is the merged run's alone"


def test_jenkins_publishes_the_run_directory(sandbox, written):
    text = text_of("jenkins")
    publish = groovy_block(text, r"def publishFarmRun\(\)\s*\{")
    assert "farmRunDir()" in publish
    (script,) = sh_scripts(groovy_block(text, r"def farmRunDir\(\)\s*\{"))
    jobs = jenkins_jobs(text)
    sandbox.run(jobs["pre-merge"].farm_script(), 1, JK_SHELL)  # makes the newest run directory
    out = subprocess.run(["sh", "-e", "-c", script], cwd=sandbox.root, capture_output=True)
    run_dir = out.stdout.decode().strip()
    assert run_dir == written.run_dir
    for name in ("nightly", MERGE, "pre-merge"):  # the run farm named, not the newest
        sandbox.run(jobs[name].farm_script(), 0, JK_SHELL, {"STUB_RUN_ID": older_run(sandbox)})
        out = subprocess.run(["sh", "-e", "-c", script], cwd=sandbox.root, capture_output=True)
        assert out.stdout.decode().strip() == f"runs/{older_run(sandbox)}", name
    junit_step = re.search(r"junit\(testResults: \"([^\"]+)\"", publish)
    assert junit_step, "publishFarmRun() hands the JUnit XML to junit()"
    junit = junit_step[1]
    assert junit.replace("${runDir}", run_dir) == written.junit
    archive_step = re.search(r"archiveArtifacts\(artifacts: \"([^\"]+)\"", publish)
    assert archive_step, "publishFarmRun() archives the run directory"
    archived = archive_step[1]
    patterns = [p.strip().replace("${runDir}", run_dir) for p in archived.split(",")]
    for path in (written.junit, written.summary, written.report + "/index.html"):
        assert any(fnmatch.fnmatch(path, p) for p in patterns), path
    assert "skipMarkingBuildUnstable: true" in publish, "farm's exit code decides alone"
    for name in ("pre-merge", MERGE):
        assert "publishFarmRun()" in groovy_block(jobs[name].groovy, r"\balways\s*\{"), name


def test_jenkins_shards_stash_their_run_directories_for_the_merge(written):
    jobs = jenkins_jobs(text_of("jenkins"))
    always = groovy_block(jobs["nightly"].groovy, r"\balways\s*\{")
    assert "String runDir = farmRunDir()" in always, "the run directory farm named"
    stash = re.search(r"stash\(name: \"([^\"]+)\".*?includes: \"([^\"]+)\"", always, re.S)
    assert stash, "each shard stashes its run directory, whatever its verdict"
    includes = [p.strip().replace("${runDir}", written.run_dir) for p in stash[2].split(",")]
    for path in (written.junit, written.summary, written.allure_results + "/x-result.json"):
        assert any(fnmatch.fnmatch(path, p) for p in includes), path
    values = jenkins_shard_values(jobs["nightly"].groovy)
    merge = jobs[MERGE].groovy
    unstashed = re.search(r"for \(shard in \[([^\]]*)\]\)", merge)
    assert unstashed and re.findall(r"'(\d+)'", unstashed[1]) == values, "every shard's stash"
    assert 'unstash "' + stash[1].replace("${env.SHARD}", "${shard}") + '"' in merge


def test_gitlab_merge_keeps_the_merged_run_alone_as_its_artifacts(sandbox, written):
    """The merge job's artifacts and test report (runs/*/junit.xml) are the merged run's alone:
    after farm merge names its run, after_script drops the shards' run directories."""
    job = gitlab_jobs(text_of("gitlab"))[MERGE]
    shard = sandbox.root / "runs" / written.run_id.replace("nightly", "shard1")
    shard.mkdir()
    status, _ = sandbox.run(job.farm_script(), 1, GL_SHELL)
    assert status == 1
    after = "\n".join(job.doc["after_script"][:-1])  # the prune (last) needs a store
    sandbox.run(after, 0, GL_SHELL)
    left = sorted(p.name for p in (sandbox.root / "runs").glob("[0-9]*-*"))
    assert left == [written.run_id], "the shards' and older runs' directories are gone"
    assert "farm runs prune" in job.doc["after_script"][-1]


def jenkins_shard_values(block: str) -> list[str]:
    axis = groovy_block(block, r"\baxis\s*\{")
    assert re.search(r"name\s+'SHARD'", axis)
    values = re.search(r"values\s+(.*)", axis)
    assert values, "the SHARD axis names its values"
    return re.findall(r"'(\d+)'", values[1])


# -- sharding: N jobs, one run group, a merge after all of them ----------------------------------

RUN_IDS = {"GITHUB_RUN_ID": "4242", "CI_PIPELINE_ID": "4242", "BUILD_TAG": "jenkins-farm-main-42"}


def shard_args(kind: str, text: str, k: int, sandbox: Sandbox) -> list[str]:
    """farm's argv in shard k of the recipe's nightly (its CI's own parallelism: the index and
    the count as that CI gives them to the k-th job)."""
    jobs = PARSERS[kind](text)
    if kind == "github":
        raw = jobs["nightly"].doc
        context = {"matrix.shard": str(k), "strategy.job-total": str(len(shard_values(raw)))}
        return gh_outcome(raw, sandbox, 0, context=context, env=RUN_IDS)["farm_args"]
    if kind == "gitlab":
        n = jobs["nightly"].doc["parallel"]
        env = {**RUN_IDS, "CI_NODE_INDEX": str(k), "CI_NODE_TOTAL": str(n)}
        _, args = sandbox.run(jobs["nightly"].farm_script(), 0, GL_SHELL, env)
        return args
    _, args = sandbox.run(jobs["nightly"].farm_script(), 0, JK_SHELL, {**RUN_IDS, "SHARD": str(k)})
    return args


def shard_count(kind: str, text: str) -> int:
    """How many parallel jobs the recipe's CI runs the nightly as."""
    job = PARSERS[kind](text)["nightly"]
    if kind == "github":
        return len(shard_values(job.doc))
    if kind == "gitlab":
        return int(job.doc["parallel"])
    return len(jenkins_shard_values(job.groovy))


def sharding_problems(kind: str, text: str, sandbox: Sandbox) -> list[str]:
    """Why the recipe's nightly is not N jobs running shards 1..N of one run group."""
    n = shard_count(kind, text)
    problems = [] if n > 1 else [f"{n} parallel job(s): not sharded"]
    groups = set()
    for k in range(1, n + 1):
        args = shard_args(kind, text, k, sandbox)
        shard = args[args.index("--shard") + 1] if "--shard" in args else None
        if shard != f"{k}/{n}":
            problems.append(f"job {k} of {n} runs --shard {shard}")
        groups.add(args[args.index("--run-group") + 1] if "--run-group" in args else None)
    if len(groups) != 1 or None in groups:
        problems.append(f"the shards' run groups: {sorted(map(str, groups))}")
    merge = PARSERS[kind](text)[MERGE].farm_script()
    shell = {"github": GH_SHELL, "gitlab": GL_SHELL, "jenkins": JK_SHELL}[kind]
    _, args = sandbox.run(merge, 0, shell, RUN_IDS)
    if args is None or args[:1] != ["merge"] or args[1:2] != sorted(map(str, groups))[:1]:
        problems.append(f"farm merge {args[1:2] if args else None}, not the shards' group {groups}")
    return problems


@pytest.mark.parametrize("kind", RECIPES)
def test_the_nightly_is_n_parallel_shards_of_one_run_group(kind, sandbox):
    """The CI's own parallelism (GitHub's matrix, GitLab's parallel:, Jenkins' matrix of parallel
    stages) runs N jobs; job k runs --shard k/N, and all of them and the merge name one group."""
    assert shard_count(kind, text_of(kind)) == 4
    assert sharding_problems(kind, text_of(kind), sandbox) == []


@pytest.mark.parametrize(
    ("kind", "right", "wrong"),
    [
        ("github", "${{ strategy.job-total }}", "5"),
        ("gitlab", "$CI_NODE_INDEX/$CI_NODE_TOTAL", "$CI_NODE_INDEX/3"),
        ("jenkins", '"$SHARD/4"', '"$SHARD/5"'),
        ("jenkins", "'1', '2', '3', '4'", "'1', '2', '3'"),
        ("github", 'farm merge "github-$GITHUB_RUN_ID"', 'farm merge "github-$GITHUB_RUN_NUMBER"'),
    ],
)
def test_the_sharding_checker_catches_a_wrong_n_or_group(kind, right, wrong, sandbox):
    text = text_of(kind)
    assert right in text
    assert sharding_problems(kind, text.replace(right, wrong), sandbox) != []


def test_the_merge_runs_after_every_shard_whatever_their_verdicts():
    github = github_jobs(text_of("github"))[MERGE].doc
    assert github["needs"] in ("nightly", ["nightly"]), "needs the matrix: all of its jobs"
    assert github["if"].startswith("always() && "), "after failed shards too"
    assert github_jobs(text_of("github"))["nightly"].doc["strategy"]["fail-fast"] is False
    gitlab = gitlab_jobs(text_of("gitlab"))[MERGE].doc
    assert gitlab["needs"] == [{"job": "farm:nightly", "artifacts": True}]
    assert all(rule.get("when") == "always" for rule in gitlab["rules"])
    text = text_of("jenkins")
    stages = re.findall(r"stage\('([\w-]+)'\)", text)
    assert stages.index("nightly") + 1 == stages.index(MERGE), "the stage after the shards"
    verdict = groovy_block(text, r"def farmVerdict\(int code\)\s*\{")
    assert "catchError(buildResult: 'FAILURE', stageResult: 'FAILURE')" in verdict, (
        "a failing shard must not skip the merge stage"
    )


def test_pre_merge_compares_with_the_latest_nightly_baseline(sandbox):
    """After the smoke run, each recipe compares it with the nightly tier's baseline (the
    latest merged nightly, unless one was set), never changing the verdict."""
    for kind in RECIPES:
        compares = [
            c for s in PARSERS[kind](text_of(kind))["pre-merge"].scripts for c in farm_commands(s)
        ]
        assert ["baseline", "show", "--tier", "nightly"] in compares, kind
        (compare,) = [c for c in compares if c[:1] == ["compare"]]
        assert compare[compare.index("--baseline") + 1] == "$nightly", kind


# -- the store: PostgreSQL from the CI's secrets, never in a file ---------------------------------

CREDENTIALS = re.compile(
    r"postgres(?:ql)?://[^\s'\"@/]*:[^\s'\"@/]+@(?!HOST)|password\s*[=:]\s*(?!\s*$)\S+",
    re.IGNORECASE,
)


def credentials_in(text: str) -> list[str]:
    """A database URL with a password or a password assignment, outside the documentation's
    placeholder (postgresql://USER:PASSWORD@HOST...)."""
    return [m[0] for m in CREDENTIALS.finditer(text) if "USER:PASSWORD@HOST" not in m[0]]


@pytest.mark.parametrize("kind", RECIPES)
def test_no_credentials_in_the_recipe(kind):
    assert credentials_in(text_of(kind)) == []


def test_the_credentials_checker_finds_a_password():
    assert credentials_in("FARM_STORE: postgresql://farm:s3cret@db.lab:5432/farm")
    assert credentials_in("env:\n  PGPASSWORD=hunter2")
    assert credentials_in("postgresql://USER:PASSWORD@HOST:5432/DB") == []


def test_github_takes_the_store_from_its_secrets_in_every_job():
    for name, job in github_jobs(text_of("github")).items():
        assert job.doc["env"]["FARM_STORE"] == "${{ secrets.FARM_STORE }}", name
        cached = [s for s in job.doc["steps"] if str(s.get("uses", "")).startswith("actions/cache")]
        assert cached == [], f"{name}: the store is the server's, nothing of it is cached"


def test_gitlab_leaves_the_store_to_its_ci_variables():
    doc = yaml.safe_load(text_of("gitlab"))
    for name, job in gitlab_jobs(text_of("gitlab")).items():
        assert "FARM_STORE" not in (job.doc.get("variables") or {}), name
        assert "cache" not in job.doc, f"{name}: the store is the server's, nothing is cached"
    assert "FARM_STORE" not in (doc.get("variables") or {})


def test_jenkins_takes_the_store_from_its_credentials():
    text = text_of("jenkins")
    store = re.search(r"FARM_STORE\s*=\s*(.+)", groovy_block(text, r"environment\s*\{"))
    assert store and re.fullmatch(r"credentials\('[\w-]+'\)", store[1].strip()), store


def test_pre_commit_runs_ruff_ruff_format_mypy_and_lint_imports_from_the_venv():
    doc = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in doc["repos"] for h in repo["hooks"]}
    assert {"ruff", "ruff-format", "mypy", "lint-imports"} <= set(hooks)
    assert all(repo["repo"] == "local" for repo in doc["repos"]), "no hook repository to fetch"
    for hook in hooks.values():
        assert hook["language"] == "system"
        tool = hook["entry"].split()[0]
        assert tool.startswith(".venv/bin/"), tool
    assert hooks["ruff"]["entry"].split()[1:3] == ["check", "--fix"]
    assert hooks["ruff-format"]["entry"].split()[1] == "format"
    # mypy's own files (pyproject.toml [tool.mypy]: farm, golden, suites, tests), as lint.sh
    assert hooks["mypy"]["entry"].split()[1:] == []
    assert hooks["mypy"]["pass_filenames"] is False
    assert hooks["lint-imports"]["entry"].split()[1:] == ["--no-cache"]
    assert hooks["lint-imports"]["pass_filenames"] is False
