"""A TorchTrainer job fed by Ray Data, as the Ray Train V2 guide writes it: the
trainer gets `datasets=` and `dataset_config=` (a `DataConfig` that splits
"train" among the workers and gives every worker all of "val"), each worker
reads its shard with `get_dataset_shard("train").iter_torch_batches()` once per
epoch, counts the "val" rows it sees once per start (every rank: all 64),
validates on a local loader prepared with `prepare_data_loader`, and reports
one checkpoint per epoch from rank 0 (the other ranks report without one). A
restart resumes at the epoch after the restored one. One step is one epoch."""

import os
import tempfile
import time

import torch


VAL_ROWS = 64


def datasets():
    """The trainer's `datasets=` (workload.datasets)."""
    import ray.data

    return {"train": ray.data.range(512),      # column "id": the row ids (workload.row_id: id)
            "val": ray.data.range(VAL_ROWS, override_num_blocks=1)}


def dataset_config():
    """The trainer's `dataset_config=` (workload.dataset_config): only "train" is split among the
    workers; every worker reads all of "val" (and its rows are not recorded as consumed)."""
    import ray.train

    return ray.train.DataConfig(datasets_to_split=["train"])


def train_func(config):
    import ray.train
    import ray.train.torch

    model = ray.train.torch.prepare_model(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            state = torch.load(os.path.join(d, "state.pt"))
        model.module.load_state_dict(state["model"]) if hasattr(model, "module") else model.load_state_dict(
            state["model"])
        start = state["epoch"] + 1
    val = ray.train.torch.prepare_data_loader(torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(64.0)[:, None]), batch_size=16))
    shard = ray.train.get_dataset_shard("train")
    val_rows = sum(len(b["id"]) for b in ray.train.get_dataset_shard("val").iter_batches(batch_size=VAL_ROWS))
    for epoch in range(start, config.get("epochs", 8)):
        for batch in shard.iter_torch_batches(batch_size=32, dtypes=torch.float32):
            x = batch["id"][:, None] / 512.0
            loss = ((model(x) - 2 * x) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val_loss = sum(float(model(b[0] / 64.0).pow(2).mean()) for b in val)
        time.sleep(config.get("epoch_delay_s", 0.0))
        metrics = {"epoch": epoch, "loss": float(loss), "val_loss": val_loss, "val_rows": val_rows}
        if ray.train.get_context().get_world_rank() == 0:
            with tempfile.TemporaryDirectory() as d:
                raw = model.module if hasattr(model, "module") else model
                torch.save({"model": raw.state_dict(), "epoch": epoch}, os.path.join(d, "state.pt"))
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(d))
        else:
            ray.train.report(metrics, checkpoint=None)
