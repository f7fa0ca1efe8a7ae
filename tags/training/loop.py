"""The training loop (Accelerate): one :func:`training_function` for every recipe.

Order of a run: input files checked -> ``output_dir`` claimed (another run refused, a lock
held) -> tokenizer, dataset, model, recipe, optimizer and phase-aware linear schedule, the
checkpoint's state files, eval sets -> resolved config saved (bad input found so far leaves
nothing in ``output_dir``) -> ``accelerator.prepare`` -> optional ``load_state`` (+ the
phase's recipe state) -> loop of optimizer steps (gradient accumulation, a non-finite loss
guard, clipping, per-phase start/end hooks, metrics, JSONL / tensorboard, checkpoints) ->
final model in ``output_dir/model``.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator, DataLoaderConfiguration, DistributedDataParallelKwargs
from accelerate.utils import ProjectConfiguration, broadcast_object_list, set_seed
from torch import nn
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from tags._errors import NonFiniteError, UserError
from tags._lock import LockError, OutputLock
from tags.data import EpochSampler, PairCollator, build_dataset
from tags.training.backends import build_backend_parts, uses_backend
from tags.training.config import ConfigError, TrainConfig, save_config, to_dict
from tags.training.evaluation import build_eval_sets, evaluate
from tags.training.factory import create_model, create_tokenizer
from tags.training.optim import create_optimizer, create_scheduler, phase_bounds, phase_of
from tags.training.recipes import StepContext, get_recipe
from tags.training.rundir import (
    LOCK_FILE,
    check_inputs,
    check_output_dir,
    clear_run,
    holds_run,
    trim_metrics,
)
from tags.training.state import (
    TrainState,
    accelerate_view,
    load_custom_states,
    restore_custom_states,
    save_custom_states,
)
from tags.training.timing import StageTimer, timed_iter
from tags.training.tokenizer_check import caption_sample, check_tokenizer, tokenizer_source
from tags.training.tracking import JsonlTracker, tensorboard_available
from tags.training.writes import OutputWriteError, write_failure

CHECKPOINTS = "checkpoints"
COMPLETE = "COMPLETE"
BEST = "best"  # the best evaluated weights (eval.keep_best, eval.patience)


@dataclass
class TrainResult:
    """What a finished (or stopped) run leaves behind."""

    output_dir: Path
    state: TrainState
    model: nn.Module  # the unwrapped TagsModel
    last_metrics: dict[str, float] = field(default_factory=dict)
    checkpoint: Path | None = None


def checkpoint_dirs(output_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(output_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    done = [p for p in root.iterdir() if p.is_dir() and (p / COMPLETE).is_file()]
    return sorted(done, key=lambda p: int(p.name.rsplit("_", 1)[-1]))


def resolve_checkpoint(resume_from: str | None, output_dir: str | Path) -> Path | None:
    """``None`` | ``"latest"`` (the newest complete checkpoint, or none) | a directory."""
    if not resume_from:
        return None
    if resume_from == "latest":
        found = checkpoint_dirs(output_dir)
        return found[-1] if found else None
    path = Path(resume_from)
    if not path.is_dir():
        raise ConfigError(
            f"resume_from: {path} is not a checkpoint directory; pass resume_from=latest or "
            f"a folder OUTPUT_DIR/{CHECKPOINTS}/step_N"
        )
    if not (path / COMPLETE).is_file():
        raise ConfigError(
            f"resume_from: {path} is not a complete checkpoint (no {COMPLETE} marker: not a "
            f"checkpoint, or its run stopped while saving it); pass resume_from=latest or "
            f"another OUTPUT_DIR/{CHECKPOINTS}/step_N"
        )
    return path


def phase_dir(output_dir: str | Path, index: int, name: str) -> Path:
    return Path(output_dir) / "phases" / f"{index}_{name}"


def _load_weights(model: nn.Module, path: Path) -> None:
    from tags.modeling import TagsModel

    source = (type(model) if not isinstance(model, TagsModel) else TagsModel).from_pretrained(
        str(path)
    )
    missing, unexpected = model.load_state_dict(source.state_dict(), strict=False)
    if unexpected or [k for k in missing if "decoder" not in k]:
        raise RuntimeError(f"{path}: weights do not fit ({missing=}, {unexpected=})")


class _MetricWindow:
    """Sums of per-micro-batch metrics since the last log."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.count = 0

    def add(self, metrics: dict[str, torch.Tensor]) -> None:
        for key, value in metrics.items():
            value = value.detach().float().reshape(())
            self.sums[key] = self.sums.get(key, 0.0) + value
        self.count += 1

    def reduce(self, accelerator: Accelerator) -> dict[str, float]:
        if not self.sums:
            return {}
        keys = sorted(self.sums)
        local = torch.stack([self.sums[k].to(accelerator.device) for k in keys]) / self.count
        values = accelerator.reduce(local, reduction="mean")
        self.sums, self.count = {}, 0
        return {k: float(v) for k, v in zip(keys, values.tolist())}

    def snapshot(self, accelerator: Accelerator) -> dict[str, Any]:
        """The pending sums (averaged over processes: their mean is what :meth:`reduce`
        logs) and count, as plain values for a checkpoint; ``{}`` when nothing is pending."""
        if not self.sums:
            return {}
        keys = sorted(self.sums)
        local = torch.stack([self.sums[k].to(accelerator.device) for k in keys])
        values = accelerator.reduce(local, reduction="mean")
        return {"count": self.count, "sums": dict(zip(keys, values.tolist()))}

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue the window a checkpoint's :meth:`snapshot` saved (nothing for ``{}``)."""
        sums = saved.get("sums") or {}
        self.sums = {k: torch.tensor(float(v), dtype=torch.float32) for k, v in sums.items()}
        self.count = int(saved.get("count", 0)) if sums else 0


def _materialize_data(config: TrainConfig, main: bool) -> Any:
    """``data.captions: synthetic`` -> write (main process) and point at a synthetic corpus."""
    data = config.data
    if data.captions != "synthetic":
        return data
    from dataclasses import replace

    from tags.data import write_synthetic_dataset

    root = Path(config.output_dir) / "synthetic_data"
    paths = {"captions": root / "train_caps.txt", "features": root / "train_ims.npy"}
    if main and not paths["features"].is_file():
        paths = write_synthetic_dataset(
            root,
            num_images=data.synthetic_images,
            num_regions=data.synthetic_regions,
            feature_size=data.synthetic_feature_size,
            seed=config.seed,
        )
    return replace(
        data, captions=str(paths["captions"]), features=str(paths["features"]), format="precomp"
    )


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite (more often than ``max_nonfinite_steps`` allows)."""


class NonFiniteWeightsError(NonFiniteLossError):
    """The weights became unusable (NaN, infinite, or so large that their squares overflow
    float32) in a step whose loss was still finite: found before saving them."""


def _weights_usable(module: nn.Module, accelerator: Accelerator) -> bool:
    """Whether every parameter's squared norm is finite in float32 (one agreed answer): a
    NaN or infinite weight fails, and so does one past ~1e19, whose products overflow (the
    model's outputs would be NaN although each weight is a finite number)."""
    sums = [p.detach().float().square().sum() for p in module.parameters()]
    bad = torch.zeros(1, device=accelerator.device)
    if sums:
        bad = (~torch.isfinite(torch.stack(sums))).any().float().reshape(1).to(bad.device)
    if accelerator.num_processes > 1:
        bad = accelerator.reduce(bad, reduction="sum")
    return not bool(bad.item())


def _all_finite(loss: torch.Tensor, accelerator: Accelerator) -> bool:
    """Whether the loss is finite on every process (one agreed answer)."""
    bad = (~torch.isfinite(loss.detach().float())).any().float().reshape(1)
    if accelerator.num_processes > 1:
        bad = accelerator.reduce(bad.to(accelerator.device), reduction="sum")
    return not bool(bad.item())


def _claim_output_dir(config: TrainConfig, accelerator: Accelerator) -> OutputLock:
    """Main process: refuse a directory that holds another run (unless resuming it with the
    same settings) and lock it for this run; every process raises the same error."""
    lock = OutputLock(Path(config.output_dir) / LOCK_FILE, f"output_dir {config.output_dir}")
    error = None
    if accelerator.is_main_process:
        try:
            check_output_dir(config)
            lock.acquire()
        except (ConfigError, LockError) as err:
            error = str(err)
    if accelerator.num_processes > 1:
        error = broadcast_object_list([error])[0]
    if error is not None:
        raise ConfigError(error)
    return lock


def training_function(config: TrainConfig, **recipe_kwargs: Any) -> TrainResult:
    """Train per ``config``; ``recipe_kwargs`` go to the recipe (e.g. a synthetic
    ``source`` for TAGS-DC). Works in one process and under ``accelerate launch`` /
    ``torchrun`` alike; ``config.batch_size`` is the global batch.

    Inputs are checked before ``output_dir`` is written; a directory holding another run is
    refused unless ``resume_from`` is set, and it is locked for the run. A non-finite loss
    stops the run (:class:`NonFiniteLossError`, naming the step) without updating the
    weights, after ``max_nonfinite_steps`` skipped steps.

    A run on a fresh ``output_dir`` that stops on bad input (a :class:`UserError`: e.g. a
    features file found truncated or NaN while training) before its first checkpoint leaves
    nothing behind, so the same command runs again once the input is fixed."""
    check_inputs(config)
    resolve_checkpoint(config.resume_from, config.output_dir)  # a bad resume_from: now
    accelerator = _accelerator(config)
    created = not Path(config.output_dir).exists()
    fresh = not holds_run(config.output_dir)
    lock = _claim_output_dir(config, accelerator)
    try:
        try:
            return _train(config, accelerator, **recipe_kwargs)
        except Exception as err:  # a full disk, a size limit: one line, not a traceback
            message = write_failure(err, config.output_dir)
            if message is None:
                raise
            raise OutputWriteError(message) from None
    except UserError:
        if fresh and accelerator.is_main_process and not checkpoint_dirs(config.output_dir):
            clear_run(config.output_dir)  # what this run wrote before its input failed
        raise
    finally:
        lock.release()
        if created and accelerator.is_main_process:  # a run that failed before writing
            with contextlib.suppress(OSError):
                Path(config.output_dir).rmdir()  # only when empty


def _accelerator(config: TrainConfig) -> Accelerator:
    use_tb = tensorboard_available() if config.tensorboard is None else config.tensorboard
    accelerator = Accelerator(
        cpu=config.cpu,
        mixed_precision=config.mixed_precision,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        dataloader_config=DataLoaderConfiguration(split_batches=True),
        log_with="tensorboard" if use_tb else None,
        project_config=ProjectConfiguration(project_dir=str(config.output_dir)),
        kwargs_handlers=[
            DistributedDataParallelKwargs(find_unused_parameters=config.ddp_find_unused_parameters)
        ],
    )
    if config.batch_size % accelerator.num_processes:
        raise ConfigError(
            f"batch_size {config.batch_size} is the global batch: it must be divisible by "
            f"the {accelerator.num_processes} processes"
        )
    return accelerator


def _train(config: TrainConfig, accelerator: Accelerator, **recipe_kwargs: Any) -> TrainResult:
    output_dir = Path(config.output_dir)
    use_tb = tensorboard_available() if config.tensorboard is None else config.tensorboard
    set_seed(config.seed)
    main = accelerator.is_main_process

    # --- issue 12: HF backends (BLIP / CLIP / SigLIP) on raw images: tags.training.backends
    parts = build_backend_parts(config, accelerator.print) if uses_backend(config) else None
    if parts is not None:
        tokenizer, dataset, model = parts.tokenizer, parts.dataset, parts.model
    else:  # --- end issue 12
        tokenizer = create_tokenizer(config.model)
        with accelerator.main_process_first():
            try:
                dataset = build_dataset(_materialize_data(config, main), tokenizer)
            except (OSError, ValueError) as err:  # unreadable or inconsistent data files
                raise ConfigError(f"data: {err}") from err
        model = create_model(config.model, tokenizer, dataset.feature_size)
        if model.config.region_feature_size != dataset.feature_size:
            raise ConfigError(
                f"region features are {dataset.feature_size}-d but the model expects "
                f"{model.config.region_feature_size} (model.overrides.region_feature_size)"
            )
    # a tokenizer that maps every word to one id would train silently on nothing
    check_tokenizer(tokenizer, caption_sample(dataset), tokenizer_source(config.model))
    if parts is not None:  # the loaded backend, with the TAGS heads saved beside its model
        recipe_kwargs.setdefault("backend", parts.backend)
    recipe = get_recipe(config.recipe)(
        config, accelerator, model, tokenizer, dataset, **recipe_kwargs
    )
    module = recipe.module
    optimizer = create_optimizer(module, config.optim)
    scheduler = create_scheduler(optimizer, config.phases, config.optim.warmup_ratio)
    sampler = EpochSampler(len(dataset), config.seed)
    loader = DataLoader(
        dataset,
        batch_size=config.batch_size,
        sampler=sampler,
        drop_last=True,
        collate_fn=parts.collate if parts else PairCollator(tokenizer.pad_token_id or 0),
        num_workers=config.data.num_workers,
    )
    if len(loader) == 0:
        raise ConfigError(f"batch_size {config.batch_size} exceeds the {len(dataset)} pairs")
    checkpoint = resolve_checkpoint(config.resume_from, output_dir)
    saved_states = load_custom_states(checkpoint) if checkpoint is not None else None
    eval_sets = None
    if config.eval.captions:
        with accelerator.main_process_first():
            eval_sets = build_eval_sets(
                config.eval,
                tokenizer,
                config.data.max_text_len,
                parts.backend if parts else None,
                allow_outside_root=config.data.allow_outside_root,
            )
    if main:  # inputs loaded, model, recipe and checkpoint read: this run owns output_dir
        save_config(config, output_dir / "config.yaml")
    module, optimizer, loader = accelerator.prepare(module, optimizer, loader)
    for obj in recipe.stateful():
        if isinstance(obj, nn.Module):
            obj.to(accelerator.device)
    state = TrainState()
    # saved beside save_state as plain tensors (never register_for_checkpointing: Accelerate
    # unpickles those with weights_only=False, so a crafted checkpoint could run code)
    custom = [scheduler, state, *recipe.stateful()]

    window = _MetricWindow()
    if checkpoint is None and config.resume_from == "latest" and main:
        # nothing to resume: a fresh start, without the rows of a run that saved no checkpoint
        dropped = trim_metrics(output_dir / "metrics.jsonl", 0)
        accelerator.print(
            f"resume_from=latest: no complete checkpoint in {output_dir / CHECKPOINTS}: "
            "starting at step 0"
            + (f" (the {dropped} metric rows of the earlier run dropped)" if dropped else "")
        )
    if checkpoint is not None:
        restore_custom_states(custom, checkpoint, saved_states)
        window.restore(state.log_window)  # a log window the checkpoint cut in two
        with accelerate_view(checkpoint) as view:
            accelerator.load_state(str(view))
        accelerator.step = 0  # checkpoints sit at accumulation boundaries
        if state.phase >= 0:  # per-phase recipe state (miner override, AOQ offline negatives)
            recipe.resume_phase(state.phase, config.phases[state.phase], module)
        if main:
            trim_metrics(output_dir / "metrics.jsonl", state.step)
        accelerator.print(f"resumed from {checkpoint} at step {state.step}")
    elif main and any(p.init == "initial" for p in config.phases[1:]):
        recipe.tags_model(module).save_pretrained(phase_dir(output_dir, -1, "initial"))
        recipe.save_extras(phase_dir(output_dir, -1, "initial"))
    accelerator.wait_for_everyone()

    if use_tb:
        accelerator.init_trackers("tags")
    tracker = JsonlTracker(output_dir / "metrics.jsonl", enabled=main)
    steps = [p.steps for p in config.phases]
    bounds = phase_bounds(steps)
    total = sum(steps)
    stop = min(total, config.max_steps) if config.max_steps else total
    keep_best = config.eval.keep_best or bool(config.eval.patience)
    # a run that stopped early stays stopped when resumed
    early_stopped = bool(config.eval.patience) and state.stale >= config.eval.patience
    if early_stopped:
        stop = state.step
    progress = tqdm(
        total=total, initial=state.step, disable=not (main and config.progress_bar), desc="train"
    )
    timer = StageTimer()  # time/data, time/step, time/backward (+ the recipe's stages)
    bad_window = False  # a micro batch of the current accumulation window had a bad loss
    last: dict[str, float] = {}
    saved: Path | None = checkpoint

    def begin_phase(index: int) -> None:
        phase = config.phases[index]
        # before the weights reset: the module still holds the previous phase's model (AOQ
        # ranks the training set with round 1's model, then round 2 restarts from `initial`)
        recipe.start_phase(index, phase, module)
        if index > 0 and phase.init != "continue":
            source = (
                phase_dir(output_dir, index - 1, config.phases[index - 1].name)
                if phase.init == "previous"
                else phase_dir(output_dir, -1, "initial")
            )
            _load_weights(recipe.tags_model(module), source)
            recipe.load_extras(source)  # a BLIP's TAGS heads, saved beside it
            optimizer.optimizer.state.clear()
        recipe.phase_weights_ready(index, phase, module)
        state.phase = index

    def check_weights() -> None:
        """Stop (:class:`NonFiniteWeightsError`, exit 3) before saving unusable weights: the
        loss guard only sees a step's loss, computed before its update."""
        if _weights_usable(module, accelerator):
            return
        progress.close()
        phase = config.phases[max(state.phase, 0)]
        raise NonFiniteWeightsError(
            f"non-finite weights after step {state.step} (phase {max(state.phase, 0)} "
            f"{phase.name!r}): NaN, infinite or overflowing float32; training stopped and "
            f"they were not saved; last good checkpoint: {saved or 'none'}. Lower the lr "
            "(or clip gradients: optim.max_grad_norm)"
        )

    def save_model(target: Path) -> None:
        """The model (with its tokenizer, and a backend's processor) as a usable folder."""
        check_weights()
        if main:
            recipe.tags_model(module).save_pretrained(target)
            tokenizer.save_pretrained(target)
            if parts is not None:  # issue 12: the processor beside it
                parts.save_processor(target, recipe)
        accelerator.wait_for_everyone()

    def track_best(scores: dict[str, float]) -> bool:
        """Update the best ``eval.metric`` (saving ``best/`` when asked); True when early
        stopping says stop."""
        key = f"eval/{config.eval.metric}"
        if key not in scores:
            raise ConfigError(
                f"eval.metric {config.eval.metric!r} is not an evaluation metric: "
                f"{sorted(k.removeprefix('eval/') for k in scores)}"
            )
        if scores[key] > state.best:
            state.best, state.best_step, state.stale = scores[key], state.step, 0
            if keep_best:
                save_model(output_dir / BEST)
        else:
            state.stale += 1
        return bool(config.eval.patience) and state.stale >= config.eval.patience

    def save_checkpoint() -> Path:
        check_weights()
        path = output_dir / CHECKPOINTS / f"step_{state.step:08d}"
        try:
            accelerator.save_state(str(path))
            state.log_window = window.snapshot(accelerator)
            if main:
                save_custom_states(custom, path)
        except Exception:  # e.g. a full disk: no half-written checkpoint left behind
            if main:
                shutil.rmtree(path, ignore_errors=True)
            raise
        accelerator.wait_for_everyone()
        if main:
            (path / COMPLETE).write_text(f"{state.step}\n")
            for old in checkpoint_dirs(output_dir)[: -config.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        accelerator.wait_for_everyone()
        return path

    while state.step < stop:
        if state.batch_in_epoch == 0:
            recipe.start_epoch(state.epoch)
        epoch_loader = (
            accelerator.skip_first_batches(loader, state.batch_in_epoch)
            if state.batch_in_epoch
            else loader
        )
        # the prepared loader keeps its own epoch counter (0 in a fresh process) and passes
        # it to the sampler when iterated: set it from the checkpointed position
        epoch_loader.set_epoch(state.epoch)
        sampler.set_epoch(state.epoch)
        finished_epoch = True
        for batch in timed_iter(epoch_loader, timer, "data"):
            if state.phase != phase_of(state.step, steps):
                begin_phase(phase_of(state.step, steps))
            phase = config.phases[state.phase]
            ctx = StepContext(state.step, state.phase, phase, recipe.weights(phase), config.seed)
            # dropout & co.: the global RNG is a pure function of the data position, so a
            # resumed run replays it exactly (creating a data iterator draws from it too)
            key = ctx.generator(state.epoch, state.batch_in_epoch, accelerator.process_index)
            torch.manual_seed(key.initial_seed())
            with accelerator.accumulate(module):
                with timer("step"):
                    try:
                        out = recipe.training_step(module, batch, ctx)
                    except NonFiniteError as err:  # e.g. the synthetic sampler's MLM logits
                        progress.close()
                        raise NonFiniteLossError(
                            f"{err} at step {state.step + 1} (phase {state.phase} "
                            f"{phase.name!r}): training stopped; last good checkpoint: "
                            f"{saved or 'none'}. Lower the lr or check the inputs"
                        ) from err
                with timer("backward"):  # with clipping and the optimizer step
                    if _all_finite(out.loss, accelerator):
                        accelerator.backward(out.loss)
                        if accelerator.sync_gradients and config.optim.max_grad_norm:
                            accelerator.clip_grad_norm_(
                                module.parameters(), config.optim.max_grad_norm
                            )
                    else:
                        bad_window = True
                    if not bad_window:
                        optimizer.step()
                    optimizer.zero_grad()  # at the sync step: drops a bad window's gradients
            state.batch_in_epoch += 1
            if not bad_window:
                window.add({"loss/total": out.loss, **out.metrics, **timer.metrics()})
            if not accelerator.sync_gradients:
                continue
            if bad_window:
                bad_window = False
                state.skipped += 1
                where = (
                    f"step {state.step + 1} (phase {state.phase} {phase.name!r}, epoch "
                    f"{state.epoch}, batch {state.batch_in_epoch - 1})"
                )
                if state.skipped > config.max_nonfinite_steps:
                    progress.close()
                    raise NonFiniteLossError(
                        f"non-finite loss at {where}: training stopped, the weights were not "
                        f"updated with it; last good checkpoint: {saved or 'none'}. Lower the "
                        "lr, check the inputs, or allow skipping with max_nonfinite_steps=N"
                    )
                accelerator.print(
                    f"warning: non-finite loss at {where}: step skipped "
                    f"({state.skipped} of max_nonfinite_steps={config.max_nonfinite_steps})"
                )
            lr = scheduler.get_last_lr()[0]
            scheduler.step()
            state.step += 1
            recipe.after_optimizer_step(module)
            progress.update(1)
            if state.step % config.log_every == 0 or state.step == stop:
                last = window.reduce(accelerator)
                row = {"lr": lr, "phase": state.phase, "epoch": state.epoch, **last}
                tracker.log(row, state.step)
                if use_tb:
                    accelerator.log(row, step=state.step)
                progress.set_postfix(loss=f"{last.get('loss/total', float('nan')):.4f}")
            phase_end = state.step == bounds[state.phase][1]
            every = config.eval.every and state.step % config.eval.every == 0
            if eval_sets is not None and (phase_end or every):
                scores = evaluate(recipe.tags_model(module), eval_sets, config.eval, accelerator)
                last = {**last, **scores}
                tracker.log({"phase": state.phase, **scores}, state.step)
                if use_tb:
                    accelerator.log(scores, step=state.step)
                if track_best(scores):
                    stop = state.step  # early stopping: checkpoint and leave below
                    early_stopped = True
            if phase_end:
                save_model(phase_dir(output_dir, state.phase, phase.name))
            if (
                (config.save_every and state.step % config.save_every == 0)
                or phase_end
                or (state.step == stop)
            ):
                saved = save_checkpoint()
            if state.step >= stop:
                finished_epoch = False
                break
        if finished_epoch:
            state.epoch += 1
            state.batch_in_epoch = 0

    progress.close()
    tags_model = recipe.tags_model(module)
    if early_stopped:  # the best evaluated weights are the run's model
        accelerator.print(
            f"early stopping at step {state.step} of {total}: eval/{config.eval.metric} has not "
            f"improved in {state.stale} evaluations (eval.patience={config.eval.patience}); "
            f"best {state.best:.2f} at step {state.best_step}, kept in {output_dir / BEST}"
        )
        _load_weights(tags_model, output_dir / BEST)
        recipe.load_extras(output_dir / BEST)
    elif state.step < total:  # max_steps: the weights so far, as a usable model
        accelerator.print(
            f"stopped at step {state.step} of {total} (max_steps): {output_dir / 'model'} holds "
            "the weights so far; resume_from=latest continues the run"
        )
    if state.step >= stop:
        save_model(output_dir / "model")
    if use_tb:
        accelerator.end_training()
    return TrainResult(output_dir, state, tags_model, last, saved)


def train(config: TrainConfig, **recipe_kwargs: Any) -> TrainResult:
    """Alias of :func:`training_function`."""
    return training_function(config, **recipe_kwargs)


__all__ = [
    "NonFiniteLossError",
    "NonFiniteWeightsError",
    "TrainResult",
    "checkpoint_dirs",
    "resolve_checkpoint",
    "to_dict",
    "train",
    "training_function",
]
