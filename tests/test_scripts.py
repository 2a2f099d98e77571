"""The measuring scripts run (what they measure is for `make bench`, never for a test)."""
import subprocess
import sys

from conftest import DATA, ROOT


def test_bench_script_prints_its_tables():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--corpus", str(DATA / "corpus"),
                        "--scales", "1,2", "--repeat", "1", "--runs", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "# nbtext benchmark"
    assert "corpus: 432 messages" in r.stdout
    rows = [ln.split(" | ")[0].lstrip("| ") for ln in lines if ln.startswith("| ") and "---" not in ln]
    assert rows.count("nbtext") == 2 and rows.count("nbtext --no-calibrate") == 2  # 1x and growth tables
    assert "## Growth with the corpus" in r.stdout and "2x / 1x time" in r.stdout
