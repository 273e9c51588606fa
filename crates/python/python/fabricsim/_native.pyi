"""The extension module: the fabricsim command line, run in process (crates/python/src/lib.rs)."""

__version__: str

def main(argv: list[str]) -> tuple[int, str, str]:
    """Runs ``fabricsim ARGV...``: (exit status, what it printed, the error message or "")."""

def pareto(points: list[tuple[float, float | None]], maximize: bool) -> list[bool]:
    """Which (cost, objective) points are on the Pareto front, as ``fabricsim sweep`` marks them."""

def toml_from_json(json: str) -> str:
    """A JSON document as TOML (a scenario given as a dict)."""
