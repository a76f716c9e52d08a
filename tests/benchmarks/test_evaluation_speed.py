"""The evaluation-speed benchmark on freshly initialized weights, one episode per pair (the
results' equality with running episodes out is tested in tests/model/test_evaluation.py)."""

from benchmarks.evaluation_speed import main


def test_prints_the_timing_of_a_full_evaluation(module_checkpoint, capsys):
    checkpoint = module_checkpoint(normalize_embeddings=True, encoder_kwargs={"width": 4, "batch_norm": True})
    assert main([str(checkpoint), "--episodes", "1", "--threads", "1"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("loops ended early") and "400 episodes" in line
    assert float(line.split()[3]) > 0
