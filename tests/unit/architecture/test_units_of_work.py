"""Who owns the unit of work (docs/architecture.md, "Who owns the unit of work"), checked over the source of
`chargenet.services`, and for the last rule over the edge's runtime (`chargenet/edge/*.py`) too:

- every use case takes its unit of work first: the caller's `session`, or a factory of units it opens itself
  (`transaction`, `reading`, `read_statement`); none takes the `Store`;
- inside a unit of work nothing but the store is awaited: a function given a session, and the body of every
  unit a function opens, awaits only the session's own methods and calls it hands the session to. A name
  resolved, a station asked, a request sent or a password hashed (all of which wait on something other than
  the store) happen between units, never inside one, where they would hold a pooled connection and, on SQLite,
  the one writer lock.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[3] / "chargenet" / "services"
EDGE = Path(__file__).resolve().parents[3] / "chargenet" / "edge"

# The first parameter of a use case, and its type, by who owns the unit of work.
UNITS = {
    ("session", "AsyncSession"),  # the caller's: the use case only reads and writes the store in it
    ("transaction", "Transactions"),  # its own: it waits for something else between short units
    ("reading", "Transactions"),  # its own, that only read (`Store.read`)
    ("read_statement", "ReadStatement"),  # its own, one statement (`Store.read_statement`: the hot reads)
}
# Public coroutines of the service layer that are not use cases: they take no unit of work.
HELPERS = {"pages.every_page": "gathers the pages of a use case it is given"}
# How a function names the factories of units of work it is given, and how the store's own are called.
FACTORY_TYPES = {"Transactions"}
FACTORY_METHODS = {"transaction", "read", "unit"}  # `unit`: the edge's units in a group commit


@dataclass(frozen=True)
class Function:
    module: str
    node: ast.FunctionDef | ast.AsyncFunctionDef

    @property
    def name(self) -> str:
        return f"{self.module}.{self.node.name}"

    @property
    def parameters(self) -> list[ast.arg]:
        arguments = self.node.args
        return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


def functions(source: str, module: str) -> Iterator[Function]:
    """The functions of a module: at its top level and in its classes."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield Function(module, node)
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield Function(f"{module}.{node.name}", member)


def service_functions() -> Iterator[Function]:
    for path in sorted(SERVICES.glob("*.py")):
        yield from functions(path.read_text(), path.stem)


def edge_functions() -> Iterator[Function]:
    for path in sorted(EDGE.glob("*.py")):
        yield from functions(path.read_text(), f"edge.{path.stem}")


def use_cases() -> Iterator[Function]:
    """The public coroutines at the top level of the service modules, helpers aside."""
    for function in service_functions():
        node = function.node
        if "." in function.module or not isinstance(node, ast.AsyncFunctionDef) or node.name.startswith("_"):
            continue
        if function.name not in HELPERS:
            yield function


def _annotation(parameter: ast.arg) -> str:
    return ast.unparse(parameter.annotation) if parameter.annotation is not None else ""


def _names(node: ast.AST) -> set[str]:
    return {name.id for name in ast.walk(node) if isinstance(name, ast.Name)}


def _hands_the_session(expression: ast.expr, sessions: set[str]) -> bool:
    """Whether awaiting `expression` is a step of the unit of work `sessions` name: a method of the session (or of
    what a method of it returned), or a call that is handed the session, itself or in a lambda."""
    if not isinstance(expression, ast.Call):
        return False
    target = expression.func
    while isinstance(target, ast.Attribute):
        target = target.value
    if isinstance(target, ast.Name) and target.id in sessions:
        return True
    if isinstance(target, ast.Call) and _hands_the_session(target, sessions):
        return True
    handed = [*expression.args, *(keyword.value for keyword in expression.keywords)]
    for argument in handed:
        if isinstance(argument, ast.Name) and argument.id in sessions:
            return True
        if isinstance(argument, ast.Lambda) and _names(argument.body) & sessions:
            return True
    return False


def _waits_outside(body: list[ast.stmt], sessions: set[str]) -> Iterator[str]:
    """What `body`, run inside the unit of work `sessions` name, awaits that is not a step of that unit."""
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Await):
                awaited = [node.value]
            elif isinstance(node, ast.AsyncWith):
                awaited = [item.context_expr for item in node.items]
            elif isinstance(node, ast.AsyncFor) and not isinstance(node.iter, ast.Await):
                awaited = [node.iter]
            else:
                continue
            for expression in awaited:
                if not _hands_the_session(expression, sessions):
                    yield ast.unparse(expression)


def _opens_a_unit(expression: ast.expr, factories: set[str]) -> bool:
    """`transaction()`, `reading()` (a factory the function was given) or `....transaction()`, `....read()`."""
    if not isinstance(expression, ast.Call) or expression.args or expression.keywords:
        return False
    called = expression.func
    if isinstance(called, ast.Name):
        return called.id in factories
    return isinstance(called, ast.Attribute) and called.attr in FACTORY_METHODS


def waits_inside_units(function: Function) -> list[str]:
    """What `function` awaits inside a unit of work, other than the store: in the whole of its body when it is
    given a session, and in the body of each unit it opens."""
    parameters = function.parameters
    sessions = {parameter.arg for parameter in parameters if _annotation(parameter) == "AsyncSession"}
    if sessions:
        return list(_waits_outside(function.node.body, sessions))
    factories = {parameter.arg for parameter in parameters if _annotation(parameter) in FACTORY_TYPES}
    found = []
    for node in ast.walk(function.node):
        if isinstance(node, ast.AsyncWith):
            for item in node.items:
                if _opens_a_unit(item.context_expr, factories) and isinstance(item.optional_vars, ast.Name):
                    found += _waits_outside(node.body, {item.optional_vars.id})
    return found


def test_every_use_case_takes_its_unit_of_work_first() -> None:
    wrong = {}
    for function in use_cases():
        first = function.parameters[0] if function.parameters else None
        shape = (first.arg, _annotation(first)) if first is not None else ("", "")
        if shape not in UNITS:
            wrong[function.name] = f"{shape[0]}: {shape[1]}"
    assert wrong == {}


def test_no_service_function_takes_the_store() -> None:
    taking = [
        f"{function.name}({parameter.arg})"
        for function in service_functions()
        if "." not in function.module
        for parameter in function.parameters
        if "Store" in _names(parameter.annotation or ast.Constant(None))
    ]
    assert taking == []


def test_nothing_but_the_store_is_awaited_inside_a_unit_of_work() -> None:
    waits = {function.name: found for function in service_functions() if (found := waits_inside_units(function))}
    assert waits == {}


def test_nothing_but_the_store_is_awaited_inside_a_unit_of_the_edge() -> None:
    """A station message plans in pure code between reads and writes; the plugins and the upstream are asked
    between its units, never inside one."""
    waits = {function.name: found for function in edge_functions() if (found := waits_inside_units(function))}
    assert waits == {}


PLANTED = """
async def create(session: AsyncSession, url: str, resolver: Resolver) -> None:
    await reachable_site(session, "site")
    await check_target(url, resolver=resolver)
    session.add(Webhook(url=url))
    await session.flush()

async def command(transaction: Transactions, edge: StationCommands) -> None:
    async with transaction() as session:
        station = await session.get(Station, "ST-1")
        await edge.command(station.id, "Reset", {})

async def listed(session: AsyncSession) -> list[str]:
    return await every_page(lambda page: list_sites(session, page))

async def resolved_first(transaction: Transactions, url: str) -> None:
    await check_target(url)
    async with transaction() as session:
        await session.flush()
"""


def test_a_planted_wait_inside_a_unit_of_work_is_found() -> None:
    waits = {function.node.name: waits_inside_units(function) for function in functions(PLANTED, "planted")}
    assert waits == {
        "create": ["check_target(url, resolver=resolver)"],
        "command": ["edge.command(station.id, 'Reset', {})"],
        "listed": [],
        "resolved_first": [],
    }
