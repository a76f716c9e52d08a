"""What a user watches during ``rllib train file``: progress rows with the policy loss, the step
accuracy, the latest evaluation's seen / unseen AvgSR and the states trained per second; the
results' folder (not Ray's /tmp/ray session) as the logdir; none of the warnings RLlib and
gymnasium print that a user cannot act on."""

import subprocess
import sys

import yaml

from tests.rllib.conftest import TINY_MODEL

QUIETED = ("DeprecationWarning", "RLModuleConfig", "Overriding environment", "on the new API stack")
COLUMNS = ("policy loss", "step accuracy", "seen AvgSR", "unseen AvgSR", "states/s")


def test_the_console_of_a_training_run(tmp_path):
    spec = {
        "tiny": {
            "run": "SynPo",
            "env": "synpo_pairs",
            "stop": {"training_iteration": 3},
            "config": {
                "seed": 1,
                "trajectories_per_update": 4,
                "warmup_trajectories": 4,
                "evaluation_interval": 2,
                "greedy_episodes_per_pair": 1,
                "model_config": TINY_MODEL,
                "env_config": {"num_slots": 4, "gridworld": {"max_steps": 20}},
            },
        }
    }
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(spec))
    storage = tmp_path / "runs"
    command = [
        sys.executable,
        "-m",
        "rllib_synpo.cli",
        "train",
        "file",
        "tiny.yaml",
        "--storage-path",
        "runs",
    ]
    process = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    console = process.stdout + process.stderr
    assert process.returncode == 0, console
    assert [text for text in QUIETED if text in console] == []
    assert "/tmp/ray" not in console
    assert f"Result logdir: {storage}/tiny" in console
    assert f"tensorboard --logdir {storage}/tiny" in console
    header = [line for line in process.stdout.splitlines() if "Trial name" in line][-1]  # the final table
    assert all(column in header for column in COLUMNS), header
    row = next(line for line in process.stdout.splitlines() if "TERMINATED" in line and "SynPo_" in line)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    iteration, _seconds, loss, accuracy, seen, unseen, rate = cells[3:]
    assert iteration == "3" and float(loss) > 0 and 0 <= float(accuracy) <= 1
    assert 0 <= float(seen) <= 1 and 0 <= float(unseen) <= 1 and float(rate) > 0
    # The trial process's own log lines are in its folder, not on the console.
    (trial,) = (storage / "tiny").glob("SynPo_*")
    trial_log = "Checkpoint successfully created"
    assert trial_log in (trial / "stderr.txt").read_text() and trial_log not in console
    assert (trial / "stdout.txt").is_file() and "pid=" not in console


def test_every_option_of_every_command_says_what_it_does_in_its_help():
    """``rllib ... --help`` explains each argument, not only its name."""
    import argparse

    from rllib_synpo.cli.main import _parser

    undocumented, parsers = [], [("rllib", _parser())]
    while parsers:
        name, parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += [(f"{name} {verb}", sub) for verb, sub in action.choices.items()]
            elif not action.help:
                undocumented.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not undocumented, undocumented
