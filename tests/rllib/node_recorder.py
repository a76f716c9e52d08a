"""An RLlib callback for the cluster tests: every result names the Ray node its trial ran on
(the nodes of a `ray.cluster_utils.Cluster` share one IP address and host name)."""

from ray.rllib.callbacks.callbacks import RLlibCallback

NODE_ID = "node_id"


class NodeRecorder(RLlibCallback):
    def on_train_result(self, *, algorithm, metrics_logger=None, result: dict, **kwargs) -> None:
        import ray

        result[NODE_ID] = ray.get_runtime_context().get_node_id()
