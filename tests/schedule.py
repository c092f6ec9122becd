"""How the suite is spread over pytest-xdist workers (``--dist loadgroup``, pyproject.toml):
which tests share a worker, and which start first. A test helper, not a test.

pytest-xdist's own loadgroup tells the controller a test's group by appending ``@group`` to
the test's node id; pytest 9.2's structured node ids ignore that, and the grouped tests were
spread over the workers as if unmarked (each worker started its own llama.cpp server and ran
the probe module's fixture again). Here each worker writes its plan, a list of units, to a
file the controller reads before it hands out the first test:

- a unit goes to one worker, its tests in collection order: the tests using a fixture of
  ``one_worker`` (a server slow to start: one for the session, not one per worker), or
  marked ``xdist_group`` with one name; the tests of one module that use a module- or
  class-scoped fixture (set up once); else a single test;
- units with more slow tests go first, in collection order otherwise: a long test never
  starts last while the other worker idles, and the fast tests fill in at the end.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

#: the key of ``workerinput`` that names the folder of the workers' plans
PLAN_KEY = "reljudge_plan_folder"
FOLDER = pytest.StashKey[Path]()
#: fixtures set up once for several tests of a module
SHARED_SCOPES = frozenset({"module", "class", "package"})


def unit_key(item: pytest.Item, one_worker: frozenset[str]) -> str:
    """The unit of an item: what it must share a worker with."""
    shared = sorted(one_worker & set(getattr(item, "fixturenames", ())))
    groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                     for m in item.iter_markers("xdist_group")})
    if shared or groups:
        return "group:" + "+".join(shared + groups)
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d and d[-1].scope in SHARED_SCOPES for d in defs):
        return "module:" + item.nodeid.split("::", 1)[0]
    return "test:" + item.nodeid


def plan(items: list[pytest.Item], one_worker: frozenset[str]) -> list[list[str]]:
    """The items' node ids in units, the units with more slow tests first."""
    units: dict[str, list[str]] = {}
    slow: dict[str, int] = {}
    for item in items:
        key = unit_key(item, one_worker)
        units.setdefault(key, []).append(item.nodeid)
        slow[key] = slow.get(key, 0) + (item.get_closest_marker("slow") is not None)
    return [units[k] for k in sorted(units, key=lambda k: -slow[k])]  # stable


class Schedule:
    """The plugin (tests/conftest.py registers it): the workers write their plans, the
    controller schedules by them under ``--dist loadgroup``."""

    def __init__(self, one_worker: frozenset[str]) -> None:
        self.one_worker = one_worker

    @pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker sends its collection
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """On a worker of ``PlannedScheduling``: write the plan of its items."""
        folder = getattr(session.config, "workerinput", {}).get(PLAN_KEY)
        if folder is None:
            return
        path = Path(folder) / f"{session.config.workerinput['workerid']}.json"
        path.with_suffix(".tmp").write_text(json.dumps(plan(session.items, self.one_worker)))
        os.replace(path.with_suffix(".tmp"), path)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """On the controller: tell each worker where to write its plan."""
        node.workerinput[PLAN_KEY] = str(plan_folder(node.config))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """On the controller under ``--dist loadgroup``: the scheduler of the plan."""
        return make_scheduler(config, log) if config.getvalue("dist") == "loadgroup" else None


def plan_folder(config: pytest.Config) -> Path:
    """The controller's folder of the workers' plans (made once, removed at the end)."""
    if FOLDER not in config.stash:
        config.stash[FOLDER] = Path(tempfile.mkdtemp(prefix="reljudge-xdist-"))
        config.add_cleanup(functools.partial(shutil.rmtree, config.stash[FOLDER], True))
    return config.stash[FOLDER]


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The controller's scheduler under ``--dist loadgroup``: the workers' plan, in order."""
    from xdist.scheduler import LoadScopeScheduling

    class PlannedScheduling(LoadScopeScheduling):
        """pytest-xdist's scope scheduling over the units of the workers' plan, handed out in
        the plan's order (not by size); a test missing from the plan is a unit alone."""

        def __init__(self) -> None:
            super().__init__(config, log)
            self.unit_of: dict[str, str] = {}

        def _split_scope(self, nodeid: str) -> str:
            return self.unit_of.get(nodeid, nodeid)

        def schedule(self) -> None:
            if self.collection is not None:  # a node added later: as pytest-xdist does
                super().schedule()
                return
            assert self.collection_is_completed
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(next(iter(self.registered_collections.values())))
            if not self.collection:
                return
            collected = set(self.collection)
            self.workqueue = OrderedDict()
            for n, unit in enumerate(self._read_plan()):
                for nodeid in unit:
                    if nodeid in collected:
                        self.unit_of[nodeid] = f"unit {n}"
                        self.workqueue.setdefault(f"unit {n}", {})[nodeid] = False
            for nodeid in self.collection:
                if nodeid not in self.unit_of:
                    self.workqueue[nodeid] = {nodeid: False}
            for _ in range(len(self.nodes) - len(self.workqueue)):  # more workers than units
                self.assigned_work.popitem()[0].shutdown()
            for node in self.nodes:
                self._assign_work_unit(node)
            for node in self.nodes:  # each starts with two units where it can
                self._reschedule(node)
            if not self.workqueue:
                for node in self.nodes:
                    node.shutdown()

        def _read_plan(self) -> list[list[str]]:
            for node in self.registered_collections:
                path = plan_folder(config) / f"{node.gateway.id}.json"
                if path.exists():
                    return json.loads(path.read_text())
            self.log("no worker wrote a plan: every test is a unit of its own")
            return []

    return PlannedScheduling()
