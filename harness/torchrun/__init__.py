"""The torchrun runtime (`workload.runtime: torchrun`): the reference workload
under TorchElastic (`python -m torch.distributed.run`), without Ray, writing the
same history as a Ray Train run so the same checks and `ftharness compare` apply.

- `launcher`: hosts the rendezvous store and starts one elastic agent per node
  (a local process group each); tears every process down, always.
- `agent`: `torch.distributed.run` itself, plus a recorder of the agent's own
  decisions (rendezvous rounds, failures against `--max-restarts`).
- `worker`: the Ray-free worker entry: env -> gloo process group -> the
  reference loop (ftharness.harness.job.workload.run_loop) with checkpoints in storage.
- `storage`: the checkpoint directory layout (commit by rename, latest, retention).
- `client`, `collector`: workers and agents hand events over loopback TCP to
  the collector in the harness process, which appends them to history.jsonl.
"""
