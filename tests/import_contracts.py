"""An import-linter contract type the built-in ones lack: no import cycle between any two modules
of the given packages, counting imports made inside functions (grimp sees every import
statement). import-linter's own acyclic_siblings looks only at siblings' packages; a cycle such as
dispatch -> prepare -> plan -> dispatch within one package is what this one finds.

Used by pyproject.toml [tool.importlinter] (run by .ci/lint.sh as lint-imports)."""

from __future__ import annotations

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def import_cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    nxt = sorted(graph.find_modules_directly_imported_by(succ) & modules)
                    work.append((succ, iter(nxt)))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


class AcyclicModulesContract(Contract):
    type_name = "acyclic_modules"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        roots = list(self.packages)  # type: ignore[call-overload]  # import-linter's fields
        modules = {m for m in graph.modules if any(m == p or m.startswith(p + ".") for p in roots)}
        cycles = import_cycles(graph, modules)
        chains = []
        for cycle in cycles:
            members = set(cycle)
            # One import chain round the cycle, to show where to cut it.
            first = cycle[0]
            for nxt in sorted(graph.find_modules_directly_imported_by(first) & members):
                back = graph.find_shortest_chain(importer=nxt, imported=first)
                if back:
                    chains.append([first, *back])
                    break
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles, "chains": chains})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle, chain in zip(check.metadata["cycles"], check.metadata["chains"], strict=False):
            output.print_error(f"{len(cycle)} modules import each other: {', '.join(cycle)}")
            output.indent_cursor()
            output.print_error(" -> ".join(chain), bold=False)
            output.new_line()
