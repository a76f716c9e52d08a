"""The `thor` extra's ai2thor 5.0 sits next to numpy 2 and Ray without conflicts (CI installs it
with the `test` extra into a clean environment)."""

import subprocess
import sys
from importlib.metadata import version


def test_ai2thor_5_numpy_2_and_ray_install_together():
    assert version("ai2thor").split(".")[0] == "5"
    assert int(version("numpy").split(".")[0]) >= 2
    assert version("ray")
    check = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
