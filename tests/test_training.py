"""Training and evaluation."""

import mha_lib
from mha_lib.model import AttentionModel
from mha_lib.tasks import OffsetCopy
from mha_lib.training import evaluate, train


def test_training_lowers_the_loss_and_is_repeatable():
    task = OffsetCopy(offsets=(1,), seq_len=8, d_in=4)
    losses = []
    for _ in range(2):
        mha_lib.seed_everything(0)
        model = AttentionModel.for_task(task, d_model=16, num_heads=2)
        before = evaluate(model, task, batch_size=256)
        history = train(model, task, steps=150, seed=0)
        losses.append(evaluate(model, task, batch_size=256))
    assert history["step"][-1] == 149 and len(history["loss"]) == len(history["step"])
    assert losses[0] < 0.3 * before, "one offset is easy for one head"
    assert losses[0] == losses[1], "same seed, same result"
