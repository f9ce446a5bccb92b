"""What allure-pytest writes for each case, at the cost of one file per case.

allure-pytest, as it is, spends about a third of a pytest worker's time at nightly scale on
things no reader of the farm's report sees:

* a fixture container file for every function-scoped fixture of every case (the ``case``
  parameter: 6,700 files a nightly run), which the report step would leave out anyway
  (farm/results/allure_input.py): only a container whose fixture failed or broke says
  anything;
* every file encoded by ``json.dump``, which always takes the standard library's pure-Python
  encoder (``json.dumps`` uses the C one);
* a membership test of each case in the children *list* of every session fixture's container,
  twice per case: O(cases) per case, quadratic over a worker's share of the run;
* the suites' parametrize argument ``case`` as a shown parameter, which the report then repeats
  in its search indexes, though the case id is the test's title already (and
  ``allure.dynamic.parameter`` changes only the value of a parameter allure-pytest added).

:func:`install` keeps allure-pytest's listener and file logger in place (and so their clean-up
and everything else they do) and changes those things on the two instances. Where a
future allure-pytest has renamed what it relies on, it changes nothing: the results are the same,
only slower.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.util.run_dir import write_whole

# A fixture status that makes its container worth a file.
_SAYS_SOMETHING = frozenset({"failed", "broken"})
# Parameters written hidden: shown nowhere, still in the results (and excluded or not from the
# history id as they were).
HIDDEN_PARAMETERS = frozenset({"case"})


def install(config, on_refused: Callable[[OSError], None] | None = None) -> bool:
    """Make the running allure-pytest's output cheap (see the module's docstring). Returns
    whether it did: False without allure-pytest, without --alluredir, or with an allure-pytest
    whose internals are not the ones this was written against.

    ``on_refused``: called with the OSError of a result the file system refused (a full or
    read-only runs directory) instead of letting it out of allure-pytest's hooks, where it is a
    pytest INTERNALERROR; it may raise (an error that is no such refusal)."""
    try:
        import allure_commons
        from allure_commons.logger import AllureFileLogger
    except ImportError:
        return False
    loggers = [
        p for p in allure_commons.plugin_manager.get_plugins() if type(p) is AllureFileLogger
    ]
    listener = config.pluginmanager.get_plugin("allure_listener")
    if len(loggers) != 1 or listener is None:
        return False
    logger = loggers[0]
    if not isinstance(getattr(logger, "_report_dir", None), Path):
        return False
    if not hasattr(logger, "_report_item") or not _children_once(listener):
        return False
    report_dir: Path = logger._report_dir

    def report_item(item: Any) -> Path | None:
        try:
            return write_item(report_dir, item)
        except OSError as exc:
            if on_refused is None:
                raise
            on_refused(exc)
            return None

    logger._report_item = report_item  # type: ignore[method-assign]
    return True


def write_item(report_dir: Path, item: Any) -> Path | None:
    """Write one allure-pytest result or container as allure-pytest would (the same name, the
    same fields, written whole then renamed into place), compactly with the C encoder, with
    HIDDEN_PARAMETERS hidden; a container none of whose fixtures failed or broke is not written.
    Returns the file written."""
    from attr import asdict

    if _is_container(item) and not _says_something(item):
        return None
    data = asdict(item, filter=lambda _, v: v or v is False)
    for parameter in data.get("parameters") or ():
        if parameter.get("name") in HIDDEN_PARAMETERS:
            parameter["mode"] = "hidden"
    indent = 4 if os.environ.get("ALLURE_INDENT_OUTPUT") else None
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    final = report_dir / item.file_pattern.format(prefix=uuid.uuid4())
    write_whole(final, text.encode("utf-8"))
    return final


def _is_container(item: Any) -> bool:
    from allure_commons.model2 import TestResultContainer

    return isinstance(item, TestResultContainer)


def _says_something(container: Any) -> bool:
    fixtures = list(container.befores or ()) + list(container.afters or ())
    return any(str(getattr(f, "status", None)) in _SAYS_SOMETHING for f in fixtures)


def _children_once(listener: Any) -> bool:
    """Replace the listener's children update by one that remembers which case it has added to
    which container (a set) instead of searching the container's list."""
    try:
        from allure_commons.model2 import TestResultContainer
        from allure_pytest.listener import _test_fixtures
    except ImportError:
        return False
    cache = getattr(listener, "_cache", None)
    reporter = getattr(listener, "allure_logger", None)
    if cache is None or reporter is None or not hasattr(listener, "_update_fixtures_children"):
        return False
    added: set[tuple[str, str]] = set()
    # (the item's parent node, its fixture names) -> its fixtures: the same for every case of a
    # suite (a fixture is defined on a module, class or package, never on one item), and looking
    # them up is pytest's fixture matching for each name, twice per case.
    fixtures_of: dict[tuple[str, tuple[str, ...]], list] = {}

    def item_fixtures(item) -> list:
        names = getattr(getattr(item, "_request", None), "fixturenames", None)
        parent = getattr(item, "parent", None)
        if names is None or parent is None:
            return _test_fixtures(item)
        key = (parent.nodeid, tuple(names))
        found = fixtures_of.get(key)
        if found is None:
            found = fixtures_of[key] = _test_fixtures(item)
        return found

    def update_fixtures_children(item) -> None:
        test_uuid = cache.get(item.nodeid)
        for fixturedef in item_fixtures(item):
            group_uuid = cache.get(fixturedef)
            if not group_uuid:
                group_uuid = cache.push(fixturedef)
                reporter.start_group(group_uuid, TestResultContainer(uuid=group_uuid))
            if (group_uuid, test_uuid) not in added:
                added.add((group_uuid, test_uuid))
                reporter.update_group(group_uuid, children=test_uuid)

    listener._update_fixtures_children = update_fixtures_children
    return True


# The hooks allure.dynamic's title, label (epic, feature, story, severity, tag), parameter and
# description call.
_DYNAMIC_HOOKS = ("add_title", "add_label", "add_parameter", "add_description")


@dataclass(frozen=True)
class Annotations:
    """What `annotate` (farm/run/allure/glue.py) says of a case in its running Allure test:
    labels as (type, value) and parameters as (name, value, excluded), in the order
    allure.dynamic is given them."""

    title: str
    labels: list[tuple[str, str]]
    parameters: list[tuple[str, str, bool]]
    description: str
    # The result's testCaseId (farm/run/allure/identity.py); "": allure-pytest's own.
    test_case_id: str = ""


def apply_annotations(annotations: Annotations) -> None:
    """Give the running Allure test its title, labels, parameters and description, as
    allure.dynamic would: directly on allure-pytest's test result where its listener is the one
    plugin that takes them (one look-up of the test a case instead of a hook call and a look-up
    for each label and parameter: ~0.07 ms a case of a worker's CPU, benchmarks/case_phases.py),
    through allure.dynamic
    otherwise (another allure plugin, or an allure-pytest whose internals are not the ones this
    was written against: the same result, only slower)."""
    result = _running_result()
    if result is None:
        import allure

        allure.dynamic.title(annotations.title)
        for name, value in annotations.labels:
            allure.dynamic.label(name, value)
        for name, value, excluded in annotations.parameters:
            allure.dynamic.parameter(name, value, excluded=excluded)
        allure.dynamic.description(annotations.description)
        # allure.dynamic sets no test-case id: straight on allure-pytest's result, where it is.
        _set_test_case_id(_listener_result(), annotations.test_case_id)
        return
    from allure_commons.model2 import Label, Parameter
    from allure_commons.utils import represent

    # allure-pytest's listener: add_title, add_label, add_parameter, add_description.
    result.name = annotations.title
    result.labels.extend(Label(name, value) for name, value in annotations.labels)
    for name, value, excluded in annotations.parameters:
        shown = represent(value)
        existing = next((p for p in result.parameters if p.name == name), None)
        if existing is not None:  # only its value changes (see allure_glue.case_annotations)
            existing.value = shown
        else:
            result.parameters.append(Parameter(name=name, value=shown, excluded=excluded or None))
    result.description = annotations.description
    _set_test_case_id(result, annotations.test_case_id)


def _set_test_case_id(result: Any, test_case_id: str) -> None:
    """The case's own test-case id in place of its pytest function's (allure-pytest sets that
    one as the test is set up, before the case runs; it keeps what is set here)."""
    if result is not None and test_case_id:
        result.testCaseId = test_case_id


def _listener_result() -> Any:
    """allure-pytest's running test result, where there is one listener; else None."""
    try:
        import allure_commons
        from allure_commons.model2 import TestResult
        from allure_pytest.listener import AllureListener
    except ImportError:
        return None
    listeners = [
        p for p in allure_commons.plugin_manager.get_plugins() if type(p) is AllureListener
    ]
    if len(listeners) != 1:
        return None
    get_test = getattr(getattr(listeners[0], "allure_logger", None), "get_test", None)
    result = get_test(None) if callable(get_test) else None
    return result if isinstance(result, TestResult) else None


def _running_result() -> Any:
    """allure-pytest's running test result, where its listener alone takes the dynamic hooks;
    else None."""
    try:
        import allure_commons
        from allure_commons.model2 import TestResult
        from allure_pytest.listener import AllureListener
    except ImportError:
        return None
    manager = allure_commons.plugin_manager
    listeners = [p for p in manager.get_plugins() if type(p) is AllureListener]
    if len(listeners) != 1:
        return None
    for name in _DYNAMIC_HOOKS:
        caller = getattr(manager.hook, name, None)
        if caller is None or [i.plugin for i in caller.get_hookimpls()] != listeners:
            return None
    get_test = getattr(getattr(listeners[0], "allure_logger", None), "get_test", None)
    result = get_test(None) if callable(get_test) else None
    return result if isinstance(result, TestResult) else None
