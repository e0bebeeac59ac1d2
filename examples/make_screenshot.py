"""Regenerate examples/report-screenshot.png (the README's picture of the report) from the code as
it is: run the README's report command on the DCLM file, then photograph the top of the page with
headless Chromium (``apt-get install chromium`` where it is missing).

    python examples/make_screenshot.py [DATA]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
SHOT = ROOT / "examples" / "report-screenshot.png"
BENCHMARKS = ["-b", "arc_easy:acc_norm", "-b", "hellaswag:acc_norm", "-b", "humaneval-py:pass@1"]


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    browser = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    if browser is None:
        sys.exit("no Chromium found: apt-get install chromium")
    with tempfile.TemporaryDirectory() as scratch:
        page = Path(scratch) / "report.html"
        report = ["benchcast", "report", str(data), *BENCHMARKS, "--tpr", "20", "--target-flops", "1e23"]
        subprocess.run([*report, "--n-boot", "50", "--out", str(page)], check=True)
        shot = Path(scratch) / "shot.png"
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={shot}",
                "--window-size=1280,1800",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
        shutil.copyfile(shot, SHOT)
    print(f"wrote {SHOT}")


if __name__ == "__main__":
    main()
