"""fabricsim from Python: the command line's nouns as functions, results as Python objects.

Every function builds the command line the CLI would take (``bench(gpus=128)`` is
``fabricsim bench --gpus 128 --json``), runs it in process (the GIL released while it runs) and
reads its JSON, so results are the CLI's field for field and errors carry its messages.

Keyword arguments are the CLI's flags with ``-`` written ``_``: a value becomes ``--flag value``,
``True`` becomes ``--flag``, ``False`` and ``None`` are left out, a list repeats the flag (or is
joined by commas for the flags that take a list), and ``set={"racks": 4}`` becomes
``--set racks=4``. See docs/python.md.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Iterable, Mapping

from . import _native

__version__ = _native.__version__

__all__ = [
    "FabricsimError",
    "Result",
    "presets",
    "describe",
    "bench",
    "run",
    "replay",
    "whatif",
    "te_solve",
    "sweep",
    "cli",
]

# Flags that take one comma-separated list rather than being repeated.
_JOINED = {"compare_routing", "solver"}


class FabricsimError(Exception):
    """A command failed: ``message`` is the CLI's error, ``status`` its exit status (2 for bad
    input, 1 otherwise)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.message = message
        self.status = status


class Result:
    """A command's JSON result: ``.data`` (also by ``result[key]``), ``.records()`` (one flat
    dict per row) and ``.to_pandas()``."""

    def __init__(self, command: str, data: Any, rows: list[dict[str, Any]]):
        self.command = command
        self.data = data
        self._rows = rows

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __repr__(self) -> str:
        return f"<fabricsim {self.command} result: {len(self._rows)} rows>"

    def records(self) -> list[dict[str, Any]]:
        """One flat dict per row (docs/python.md lists the columns of each command)."""
        return [dict(r) for r in self._rows]

    def to_pandas(self):
        """The rows as a pandas DataFrame (pandas is optional: ``pip install pandas``)."""
        try:
            import pandas
        except ImportError as e:  # pragma: no cover - exercised only without pandas
            raise ImportError(
                "to_pandas() needs pandas: pip install pandas (or use .records())"
            ) from e
        return pandas.DataFrame.from_records(self.records())


def cli(*argv: str) -> str:
    """Runs ``fabricsim ARGV...`` in process and returns what it printed; raises
    :class:`FabricsimError` with the CLI's message when it fails."""
    status, out, err = _native.main([str(a) for a in argv])
    if status != 0:
        raise FabricsimError(err, status)
    return out


def _flags(options: Mapping[str, Any]) -> list[str]:
    argv: list[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if key == "set":
            items = value.items() if isinstance(value, Mapping) else value
            for item in items:
                k, v = item if isinstance(item, tuple) else str(item).split("=", 1)
                argv += ["--set", f"{k}={_scalar(v)}"]
        elif value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            if key in _JOINED:
                argv += [flag, ",".join(str(v) for v in value)]
            else:
                for v in value:
                    argv += [flag, str(v)]
        else:
            argv += [flag, str(value)]
    return argv


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(json.dumps(x) for x in v) + "]"
    return str(v)


def _json(*argv: str) -> Any:
    return json.loads(cli(*argv, "--json"))


def presets() -> Result:
    """The built-in fabrics (``topo list``): a row per preset and parameter."""
    data = _json("topo", "list")
    rows = [
        {"preset": p["name"], **{f"param.{k}": v for k, v in param.items()}}
        for p in data
        for param in p.get("params", [])
    ]
    return Result("topo list", data, rows)


def describe(preset: str | None = None, file: str | None = None, **options: Any) -> Result:
    """A fabric's figures (``topo describe``): ``.data`` holds them all, a row per tier."""
    data = _json("topo", "describe", *_flags({"preset": preset, "file": file, **options}))
    return Result("topo describe", data, [_flat(t) for t in data.get("tiers", [])])


def bench(**options: Any) -> Result:
    """An nccl-tests-style sweep (``bench``): a row per routing and size."""
    data = _json("bench", *_flags(options))
    rows = [
        {"routing": run["routing"], **_flat(row)}
        for run in data["runs"]
        for row in run["results"]
    ]
    return Result("bench", data, rows)


def run(scenario: str | os.PathLike | Mapping[str, Any] | None = None, **options: Any) -> Result:
    """Runs a scenario (``run``): a path, TOML text, a dict in the scenario format, or None for
    the built-in default. A row per job (nested figures as ``outer.inner`` columns)."""
    with _scenario_file(scenario) as path:
        argv = ["run"] + ([path] if path else []) + _flags(options)
        data = _json(*argv)
    return Result("run", data, [_flat(j) for j in data["jobs"]])


def replay(prefix: str, **options: Any) -> Result:
    """Replays Chakra traces (``replay PREFIX``). A row per job."""
    data = _json("replay", prefix, *_flags(options))
    return Result("replay", data, [_flat(j) for j in data["jobs"]])


def whatif(scenario: str | os.PathLike | Mapping[str, Any], **options: Any) -> Result:
    """Costs operational actions per job over seeds (``whatif``): a row per action and job
    (``action`` and the job's figures; ``iteration_ms`` and ``change`` per seed as lists)."""
    with _scenario_file(scenario) as path:
        data = _json("whatif", path, *_flags(options))
    rows = []
    for a in data.get("actions", []):
        for job in a.get("jobs", []):
            rows.append({"action": a["action"], "error": a.get("error"), **_flat(job)})
    return Result("whatif", data, rows)


def te_solve(**options: Any) -> Result:
    """Places a traffic matrix with TE's solvers (``te solve``): a row per routing."""
    data = _json("te", "solve", *_flags(options))
    return Result("te solve", data, [_flat(r) for r in data["routings"]])


def sweep(
    plan: str | os.PathLike,
    *,
    ray: bool = False,
    address: str | None = None,
    shards: int | None = None,
    **options: Any,
) -> Result:
    """Runs a sweep plan (``sweep PLAN``): a row per point, seed and job, with the plan's
    metrics. On this machine's cores by default; with ``ray=True``, as Ray tasks (a local Ray,
    or the cluster at ``address``), one per shard of the runs (``shards``, default the cluster's
    CPUs), gathered into the same table in the same order. The plan and its scenario must be
    readable at the same paths where the tasks run."""
    path = os.fspath(plan)
    if not ray:
        data = _json("sweep", path, *_flags(options))
        return Result("sweep", data, [_flat(r) for r in data])
    try:
        import ray as _ray
    except ImportError as e:
        raise ImportError("sweep(ray=True) needs Ray: pip install ray") from e
    if not _ray.is_initialized():
        if address is None:
            _ray.init(include_dashboard=False)
        else:
            _ray.init(address=address)
    n = shards or max(1, int(_ray.available_resources().get("CPU", 1)))
    flags = _flags(options)

    @_ray.remote
    def shard(k: int) -> list:
        return _json("sweep", path, "--shard", f"{k}/{n}", *flags)

    rows = [row for part in _ray.get([shard.remote(k) for k in range(n)]) for row in part]
    # Back into the plan's order: points (keys in alphabetical order, the last fastest), then
    # seeds; a run's rows, one per job, stay together and in order (the sort is stable).
    import tomllib

    with open(path, "rb") as f:
        spec = tomllib.load(f)
    vary = sorted(spec.get("vary", {}).items())
    rows.sort(key=lambda r: (tuple(values.index(r[key]) for key, values in vary), r["seed"]))
    if "design" in spec:
        _mark_fronts(rows, [k for k, _ in vary], spec["design"])
    return Result("sweep", rows, [_flat(r) for r in rows])


def _mark_fronts(rows: list[dict], keys: list[str], design: Mapping[str, Any]) -> None:
    """A design search's `pareto`, which a shard cannot know, over the gathered rows: per job,
    each point's cost and objective median over seeds, on the front by `fabricsim sweep`'s own
    rule (`_native.pareto`)."""
    import statistics

    objective, maximize = design["objective"], design.get("goal", "min") == "max"
    for job in dict.fromkeys(r["job"] for r in rows):
        points: dict[tuple, tuple[float, list[float], list[dict]]] = {}
        for r in rows:
            if r["job"] == job:
                key = tuple(json.dumps(r[k]) for k in keys)
                _, values, members = points.setdefault(key, (r["cost"], [], []))
                members.append(r)
                if r[objective] is not None:
                    values.append(r[objective])
        summary = [(c, statistics.median(v) if v else None) for c, v, _ in points.values()]
        for (_, _, members), on in zip(points.values(), _native.pareto(summary, maximize)):
            for r in members:
                r["pareto"] = on


def _flat(row: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts flattened to ``outer.inner`` columns; lists kept as values."""
    if not isinstance(row, Mapping):
        return {prefix or "value": row}
    out: dict[str, Any] = {}
    for k, v in row.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flat(v, name + "."))
        else:
            out[name] = v
    return out


class _scenario_file:
    """A scenario given as a path, TOML text or a dict, as a path the CLI reads."""

    def __init__(self, scenario: Any):
        self.scenario = scenario
        self.temp: str | None = None

    def __enter__(self) -> str | None:
        s = self.scenario
        if s is None:
            return None
        if isinstance(s, os.PathLike):
            return os.fspath(s)
        if isinstance(s, Mapping):
            text = _native.toml_from_json(json.dumps(s))
        elif isinstance(s, str) and ("\n" in s or "[" in s) and not os.path.exists(s):
            text = s
        else:
            return str(s)
        fd, self.temp = tempfile.mkstemp(suffix=".toml", prefix="fabricsim-")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return self.temp

    def __exit__(self, *exc: Iterable[Any]) -> None:
        if self.temp:
            os.unlink(self.temp)
