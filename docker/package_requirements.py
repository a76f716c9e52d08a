"""Write the package's requirements, as setup.cfg states them, to a requirements file.

The images install the dependencies before the source is copied in, so that a source change
does not reinstall torch and Ray; this reads ``install_requires`` (and the named extras) from
``setup.cfg`` without building the package. Standard library only: it runs in a bare venv.

    python docker/package_requirements.py --output package-requirements.txt [--extra thor]
"""

from __future__ import annotations

import argparse
import configparser
import sys
from pathlib import Path


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


def read_requirements(setup_cfg: Path, extras: list[str]) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    if not parser.read(setup_cfg):
        raise SystemExit(f"error: cannot read {setup_cfg}")
    requirements = _lines(parser.get("options", "install_requires", fallback=""))
    available = parser["options.extras_require"] if parser.has_section("options.extras_require") else {}
    for extra in extras:
        if extra not in available:
            raise SystemExit(
                f"error: {setup_cfg} has no extra {extra!r} (has: {', '.join(available) or 'none'})"
            )
        requirements += _lines(available[extra])
    return requirements


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup-cfg", type=Path, default=Path("setup.cfg"))
    parser.add_argument("--extra", action="append", default=[], help="also the requirements of this extra")
    parser.add_argument("--output", type=Path, help="file to write (default: standard output)")
    args = parser.parse_args(argv)
    text = "".join(f"{requirement}\n" for requirement in read_requirements(args.setup_cfg, args.extra))
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
