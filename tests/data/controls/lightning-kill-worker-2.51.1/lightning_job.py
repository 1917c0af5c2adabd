"""A PyTorch Lightning job as the Ray Train V2 guide writes it: a LightningModule
trained by `pl.Trainer` with `RayDDPStrategy`, `RayLightningEnvironment`,
`RayTrainReportCallback` and `prepare_trainer`, resumed from
`ray.train.get_checkpoint()`. The callback reports once per epoch, so for
ftharness one step is one epoch. `examples/lightning-*.yaml` run it under faults."""

import os
import time

import torch


def data(rows: int = 256, features: int = 8, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, features, generator=g)
    y = x @ torch.randn(features, 1, generator=g)
    return torch.utils.data.TensorDataset(x, y)


def train_func(config):
    import pytorch_lightning as pl
    import ray.train
    from ray.train.lightning import (RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback,
                                     prepare_trainer)

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

        def training_step(self, batch, _):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            self.log("loss", loss)
            return loss

        def on_train_epoch_end(self):
            time.sleep(config.get("epoch_delay_s", 0.0))   # stretch an epoch so faults land mid-run

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    loader = torch.utils.data.DataLoader(data(), batch_size=32, shuffle=False)
    trainer = pl.Trainer(
        max_epochs=config.get("epochs", 10), accelerator="cpu", devices="auto",
        strategy=RayDDPStrategy(), plugins=[RayLightningEnvironment()],
        callbacks=[RayTrainReportCallback()], enable_progress_bar=False, enable_checkpointing=False,
        logger=False, enable_model_summary=False,
    )
    trainer = prepare_trainer(trainer)
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is None:
        trainer.fit(Regressor(), train_dataloaders=loader)
    else:
        with checkpoint.as_directory() as d:
            trainer.fit(Regressor(), train_dataloaders=loader,
                        ckpt_path=os.path.join(d, RayTrainReportCallback.CHECKPOINT_NAME))
