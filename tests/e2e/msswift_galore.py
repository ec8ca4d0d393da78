"""ms-swift 4.6's `sft` with its GaLore optimizer actually built (the reference for swift's --use_galore).

In ms-swift 4.6, `--use_galore true` trains with plain AdamW: its GaloreOptimizerCallback builds GaLore's optimizer
in create_optimizer_and_scheduler, but the trainer only calls the callback's create_optimizer and
create_scheduler (swift/trainers/mixin.py), which it inherits unchanged. The callback would also read
galore_target_modules from the trainer's arguments, where the automatic default (every linear layer) never
arrives, so the test passes the modules explicitly. This driver routes the two calls through the callback's
own method and then runs ms-swift's sft unchanged. Usage: python msswift_galore.py <ms-swift sft flags...>
"""
import swift.optimizers.galore.utils as galore_utils


def create_optimizer(self, model=None):
    self.create_optimizer_and_scheduler(self.args.max_steps)
    return self.trainer.optimizer


def create_scheduler(self, num_training_steps, optimizer):
    return self.trainer.lr_scheduler


galore_utils.GaloreOptimizerCallback.create_optimizer = create_optimizer
galore_utils.GaloreOptimizerCallback.create_scheduler = create_scheduler

if __name__ == "__main__":
    from swift.pipelines import sft_main
    sft_main()
