"""Names of the batch columns SynPo's learners read besides RLlib's `Columns` (plain strings:
no Ray import), shared by the algorithm that builds the batches, the RLModule that computes the
loss inputs in its training forward pass, and the learners."""

EXPERT_ACTION = "expert_action"  # (N,) the expert's action at each state
EXECUTED_ACTION = "executed_action"  # (N,) the action executed there (the expert's, or a perturbed one)
TASK_LABELS = "task_labels"  # (N, T) expert actions for every seen task, -1 none (relabelling)
NEXT_ROW = "next_row"  # (N,) row of the next step in the batch, -1 at an episode's end (SF's TD)
