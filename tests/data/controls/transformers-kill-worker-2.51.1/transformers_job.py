"""A Hugging Face Transformers job inside a TorchTrainer train function, as the
Ray Train V2 guide writes it: `transformers.Trainer` with Ray's
`RayTrainReportCallback` and `prepare_trainer`, resumed from
`get_checkpoint()`. The model is a tiny BERT built from a config (no hub
download). One report (one `save_steps` interval) is one ftharness step."""

import os
import tempfile
import time


def train_func(config):
    import ray.train
    import torch
    import transformers
    from ray.train.huggingface.transformers import RayTrainReportCallback, prepare_trainer

    model = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=32, num_labels=2))
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 64, (256, 16), generator=g)
    labels = (ids[:, 0] % 2).long()

    class Rows(torch.utils.data.Dataset):
        def __len__(self):
            return len(ids)

        def __getitem__(self, i):
            return {"input_ids": ids[i], "attention_mask": torch.ones_like(ids[i]), "labels": labels[i]}

    class Pace(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            time.sleep(config.get("step_delay_s", 0.0))

    save_steps = config.get("save_steps", 2)
    args = transformers.TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="hf-job-"),   # Trainer's own saves; Ray's storage keeps the checkpoints
        max_steps=config.get("max_steps", 20), per_device_train_batch_size=8, learning_rate=1e-3,
        save_strategy="steps", save_steps=save_steps, logging_steps=save_steps, report_to="none",
        use_cpu=True, disable_tqdm=True, save_total_limit=2,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Rows(),
                                   callbacks=[RayTrainReportCallback(), Pace()])
    trainer = prepare_trainer(trainer)
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is None:
        trainer.train()
    else:
        with checkpoint.as_directory() as d:
            trainer.train(resume_from_checkpoint=os.path.join(d, RayTrainReportCallback.CHECKPOINT_NAME))
