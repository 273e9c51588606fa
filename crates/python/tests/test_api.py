"""The Python API on small fabrics: every call, errors as exceptions, the pandas columns, and
results equal to the CLI's ``--json`` for the same input (the binary given by FABRICSIM_BIN,
else ``fabricsim`` on PATH, else ../../target/release/fabricsim)."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

import fabricsim

ROOT = pathlib.Path(__file__).resolve().parents[3]
SMALL_ZONE = {"preset": "meta-ai-zone", "set": {"racks": 4}}


def binary():
    for candidate in (
        os.environ.get("FABRICSIM_BIN"),
        shutil.which("fabricsim"),
        str(ROOT / "target" / "release" / "fabricsim"),
    ):
        if candidate and os.path.exists(candidate):
            return candidate
    pytest.skip("no fabricsim binary to compare with (set FABRICSIM_BIN)")


def cli_json(*argv):
    out = subprocess.run(
        [binary(), *argv, "--json"], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def test_presets_and_describe():
    names = {r["preset"] for r in fabricsim.presets().records()}
    assert {"meta-cluster", "meta-ai-zone", "hpn"} <= names
    d = fabricsim.describe(**SMALL_ZONE)
    assert d["gpus"] == 4 * 2 * 8
    assert [r["name"] for r in d.records()] == ["rtsw", "ctsw"]
    assert d.data == cli_json("topo", "describe", "--preset", "meta-ai-zone", "--set", "racks=4")


def test_bench_is_the_cli_json_and_a_dataframe():
    options = dict(
        SMALL_ZONE,
        gpus=32,
        minbytes="1M",
        maxbytes="16M",
        algo="ring",
        compare_routing=["ecmp", "spray"],
    )
    result = fabricsim.bench(**options)
    assert result.data == cli_json(
        "bench", "--preset", "meta-ai-zone", "--set", "racks=4", "--gpus", "32",
        "--minbytes", "1M", "--maxbytes", "16M", "--algo", "ring",
        "--compare-routing", "ecmp,spray",
    )
    df = result.to_pandas()
    assert len(df) == 2 * 3
    for column in ("routing", "size", "time_us", "algbw_gbps", "busbw_gbps", "algorithm"):
        assert column in df.columns
    assert set(df["routing"]) == {"ecmp", "spray"}
    assert (df["busbw_gbps"] > 0).all()


def test_run_takes_a_path_toml_text_or_a_dict_alike():
    path = ROOT / "scenarios" / "shared-racks.toml"
    by_path = fabricsim.run(path)
    by_text = fabricsim.run(path.read_text())
    import tomllib

    by_dict = fabricsim.run(tomllib.loads(path.read_text()))
    for other in (by_text, by_dict):
        assert other["jobs"] == by_path["jobs"]
    assert by_path["jobs"] == cli_json("run", str(path))["jobs"]
    df = by_path.to_pandas()
    assert list(df["name"]) == ["job-a", "job-b"]
    assert (df["iteration_ms"] > 0).all()
    # Nested figures become dotted columns.
    assert any(c.startswith("exposed_comm_by_scope.") for c in df.columns)


def test_options_become_flags():
    base = fabricsim.run(ROOT / "scenarios" / "shared-racks.toml")
    spray = fabricsim.run(
        ROOT / "scenarios" / "shared-racks.toml", set={"routing.policy": "spray"}
    )
    assert spray["routing"] == "spray" and base["routing"] == "ecmp"


def test_whatif_te_and_sweep():
    w = fabricsim.whatif(
        ROOT / "scenarios" / "shared-racks.toml", drain=["zone0/ctsw0"], seeds=2
    )
    rows = w.records()
    assert {r["job"] for r in rows} == {"job-a", "job-b"}
    assert all(r["action"] == "drain zone0/ctsw0" and len(r["iteration_ms"]) == 2 for r in rows)

    te = fabricsim.te_solve(**SMALL_ZONE, pattern="ring", gpus=32, solver=["cspf"])
    assert te.data == cli_json(
        "te", "solve", "--preset", "meta-ai-zone", "--set", "racks=4", "--pattern", "ring",
        "--gpus", "32", "--solver", "cspf",
    )
    assert len(te.records()) == len(te["routings"]) >= 2

    plan = ROOT / "crates" / "python" / "tests" / "small-sweep.toml"
    s = fabricsim.sweep(plan)
    assert s.data == cli_json("sweep", str(plan))
    assert {r["routing.policy"] for r in s.records()} == {"ecmp", "spray"}


def test_errors_are_exceptions_with_the_cli_message():
    with pytest.raises(fabricsim.FabricsimError) as e:
        fabricsim.bench(gpus=100000)
    assert e.value.status == 2
    assert "--gpus" in e.value.message
    with pytest.raises(fabricsim.FabricsimError) as e:
        fabricsim.run({"routing": {"policy": "magic"}})
    assert "magic" in str(e.value)
    with pytest.raises(fabricsim.FabricsimError) as e:
        fabricsim.bench(collective="allreduse")
    assert "possible values" in e.value.message


def test_cli_runs_any_command_and_returns_its_text():
    text = fabricsim.cli("bench", "--gpus", "8", "-b", "1M", "-e", "1M")
    assert "# Avg bus bandwidth" in text
    assert fabricsim.cli("--version").startswith("fabricsim ")


def test_a_sweep_on_ray_is_the_local_sweep():
    try:
        import ray
    except ImportError:
        pytest.skip("Ray is not installed (pip install ray): the Ray sweep is not tested here")
    plan = ROOT / "crates" / "python" / "tests" / "small-sweep.toml"
    local = fabricsim.sweep(plan)
    try:
        on_ray = fabricsim.sweep(plan, ray=True, shards=2)
    finally:
        ray.shutdown()
    assert on_ray.data == local.data
    assert on_ray.records() == local.records()


def test_a_design_search_on_ray_marks_the_same_front():
    try:
        import ray
    except ImportError:
        pytest.skip("Ray is not installed (pip install ray): the Ray sweep is not tested here")
    plan = ROOT / "examples" / "design.toml"
    local = fabricsim.sweep(plan)
    try:
        on_ray = fabricsim.sweep(plan, ray=True, shards=3)
    finally:
        ray.shutdown()
    assert on_ray.records() == local.records()
    assert any(r["pareto"] for r in local.records())
