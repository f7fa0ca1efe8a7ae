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
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator, DataLoaderConfiguration, DistributedDataParallelKwargs
from accelerate.utils import ProjectConfiguration, broadcast_object_list, gather_object, set_seed
from torch import nn
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from tags.core.errors import ConfigError, NonFiniteError, UserError
from tags.core.lock import LockError, OutputLock
from tags.data import EpochSampler, PairCollator, build_dataset
from tags.training.backends import build_backend_parts, uses_backend
from tags.training.checkpoint import (
    OPTIMIZER_FILE,
    SCALER_FILE,
    Problem,
    check_files,
    complete_text,
    first_line,
    inexact_warning,
    problem,
    refusal,
    rng_differs,
)
from tags.training.config import TrainConfig, save_config, to_dict
from tags.training.evaluation import build_eval_sets, evaluate
from tags.training.factory import create_model, create_tokenizer
from tags.training.optim import create_optimizer, create_scheduler, phase_bounds, phase_of
from tags.training.recipes import StepContext, StepOutput, get_recipe
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


def earlier_checkpoint(checkpoint: Path) -> Path | None:
    """The newest complete checkpoint of the run of ``checkpoint`` saved before it, if any."""

    def step(path: Path) -> int:
        tail = path.name.rsplit("_", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    if checkpoint.parent.name != CHECKPOINTS:
        return None
    older = [p for p in checkpoint_dirs(checkpoint.parent.parent) if step(p) < step(checkpoint)]
    return older[-1] if older else None


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
    """The run's stages in order: set-up, resume, start, the step loop, finish."""
    run = _Run(config, accelerator)
    run.set_up(recipe_kwargs)
    run.resume()
    run.start()
    run.loop()
    return run.finish()


class _Run:
    """One training run, as stages that share its objects: :meth:`set_up` (model, recipe,
    optimizer, data, ``prepare``) -> :meth:`resume` -> :meth:`start` (trackers, bounds) ->
    :meth:`loop` (micro-batches, optimizer steps, evaluation and checkpoint hooks) ->
    :meth:`finish` (the final model)."""

    def __init__(self, config: TrainConfig, accelerator: Accelerator) -> None:
        self.config = config
        self.accelerator = accelerator
        self.output_dir = Path(config.output_dir)
        self.use_tb = tensorboard_available() if config.tensorboard is None else config.tensorboard
        set_seed(config.seed)
        self.main = accelerator.is_main_process

    # ------------------------------------------------------------------ set-up
    def set_up(self, recipe_kwargs: dict[str, Any]) -> None:
        """Build everything the run needs, save the resolved config, ``accelerator.prepare``."""
        self._build_model()
        self._build_training(recipe_kwargs)
        self._read_inputs()
        self._prepare()

    def _build_model(self) -> None:
        """Tokenizer, dataset and model (a HF backend's parts, or a TagsModel), checked."""
        config, accelerator = self.config, self.accelerator
        # --- issue 12: HF backends (BLIP / CLIP / SigLIP) on raw images: tags.training.backends
        parts = build_backend_parts(config, accelerator.print) if uses_backend(config) else None
        self.parts = parts
        if parts is not None:
            tokenizer, dataset, model = parts.tokenizer, parts.dataset, parts.model
        else:  # --- end issue 12
            tokenizer = create_tokenizer(config.model)
            with accelerator.main_process_first():
                try:
                    dataset = build_dataset(_materialize_data(config, self.main), tokenizer)
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
        self.tokenizer, self.dataset, self.model = tokenizer, dataset, model

    def _build_training(self, recipe_kwargs: dict[str, Any]) -> None:
        """The recipe, optimizer, phase-aware schedule, epoch sampler and data loader."""
        config, parts = self.config, self.parts
        if parts is not None:  # the loaded backend, with the TAGS heads saved beside its model
            recipe_kwargs.setdefault("backend", parts.backend)
        self.recipe = get_recipe(config.recipe)(
            config, self.accelerator, self.model, self.tokenizer, self.dataset, **recipe_kwargs
        )
        self.module = self.recipe.module
        self.optimizer = create_optimizer(self.module, config.optim)
        self.scheduler = create_scheduler(self.optimizer, config.phases, config.optim.warmup_ratio)
        self.sampler = EpochSampler(len(self.dataset), config.seed)
        self.loader = DataLoader(
            self.dataset,
            batch_size=config.batch_size,
            sampler=self.sampler,
            drop_last=True,
            collate_fn=parts.collate if parts else PairCollator(self.tokenizer.pad_token_id or 0),
            num_workers=config.data.num_workers,
        )
        if len(self.loader) == 0:
            raise ConfigError(
                f"batch_size {config.batch_size} exceeds the {len(self.dataset)} pairs"
            )

    def _read_inputs(self) -> None:
        """The checkpoint's state files and the eval sets; then the config is saved."""
        config, accelerator = self.config, self.accelerator
        self.checkpoint = resolve_checkpoint(config.resume_from, self.output_dir)
        self.saved_states, self.saved_rng, self.unrestored = None, None, []
        if self.checkpoint is not None:
            self._check_checkpoint(self.checkpoint)
        self.eval_sets = None
        if config.eval.captions:
            with accelerator.main_process_first():
                self.eval_sets = build_eval_sets(
                    config.eval,
                    self.tokenizer,
                    config.data.max_text_len,
                    self.parts.backend if self.parts else None,
                    allow_outside_root=config.data.allow_outside_root,
                    confine_to_root=config.data.confine_to_root,
                )
        if self.main:  # inputs loaded, model, recipe and checkpoint read: this run owns output_dir
            save_config(config, self.output_dir / "config.yaml")

    def _agreed(self, problems: list[Problem]) -> list[Problem]:
        """Every process's ``problems``, in one list (the same on each process)."""
        if self.accelerator.num_processes > 1:
            problems = [p for part in gather_object([problems]) for p in part]
        return list(dict.fromkeys(problems))

    def _check_checkpoint(self, checkpoint: Path) -> None:
        """Every file the resume reads (weights, optimizer, scaler, random states, custom
        states, the saved phase models it needs) read before anything is written: a damaged
        or missing one refused, naming it (``allow_inexact_resume``: the optimizer, scaler
        and random states left out, named in a warning)."""
        config, accelerator = self.config, self.accelerator
        found, self.saved_rng = check_files(
            checkpoint,
            process_index=accelerator.process_index,
            num_processes=accelerator.num_processes,
            scaler=accelerator.scaler is not None,
            cuda=accelerator.device.type == "cuda",
            contents=self.main,
            marker=COMPLETE,
        )
        found = self._agreed(found)
        if any(p.fatal for p in found) or (found and not config.allow_inexact_resume):
            raise ConfigError(refusal(checkpoint, found, earlier_checkpoint(checkpoint)))
        self.unrestored = found
        self.saved_states = load_custom_states(checkpoint)
        if len(self.saved_states) > 1 and isinstance(self.saved_states[1], dict):
            saved = TrainState()
            saved.load_state_dict(self.saved_states[1])
            self._check_saved_models(checkpoint, saved)

    def _check_saved_models(self, checkpoint: Path, saved: TrainState) -> None:
        """The models of this run a resume at ``saved`` will load (a later phase's ``init``
        weights, the best weights of early stopping) must still be there."""
        config, out = self.config, self.output_dir
        needs = []
        for index in range(max(saved.phase, 0) + 1, len(config.phases)):
            phase, before = config.phases[index], config.phases[index - 1]
            if phase.init == "initial":
                needs.append((phase_dir(out, -1, "initial"), f"phase {index} starts from it"))
            ended = saved.step >= phase_bounds([p.steps for p in config.phases])[index - 1][1]
            if phase.init == "previous" and index - 1 == saved.phase and ended:
                needs.append(
                    (phase_dir(out, index - 1, before.name), f"phase {index} starts from it")
                )
        if config.eval.patience and saved.best_step > 0:
            needs.append((out / BEST, "early stopping ends with the best weights"))
        for path, why in needs:
            if not path.is_dir():
                raise ConfigError(
                    f"resume_from: {checkpoint} continues a run whose {path} is missing ({why}): "
                    "restore it, or start a new output_dir"
                )

    def _prepare(self) -> None:
        """``accelerator.prepare``; the recipe's stateful modules on the device; fresh state."""
        accelerator = self.accelerator
        self.module, self.optimizer, self.loader = accelerator.prepare(
            self.module, self.optimizer, self.loader
        )
        for obj in self.recipe.stateful():
            if isinstance(obj, nn.Module):
                obj.to(accelerator.device)
        self.state = TrainState()
        # saved beside save_state as plain tensors (never register_for_checkpointing: Accelerate
        # unpickles those with weights_only=False, so a crafted checkpoint could run code)
        self.custom = [self.scheduler, self.state, *self.recipe.stateful()]
        self.window = _MetricWindow()

    # ------------------------------------------------------------------ resume
    def resume(self) -> None:
        """Restore the checkpoint (or start fresh, saving the ``initial`` weights if a later
        phase restarts from them)."""
        config, accelerator, output_dir = self.config, self.accelerator, self.output_dir
        checkpoint, state, main = self.checkpoint, self.state, self.main
        if checkpoint is None and config.resume_from == "latest" and main:
            # nothing to resume: a fresh start, without the rows of a run that saved no checkpoint
            dropped = trim_metrics(output_dir / "metrics.jsonl", 0)
            accelerator.print(
                f"resume_from=latest: no complete checkpoint in {output_dir / CHECKPOINTS}: "
                "starting at step 0"
                + (f" (the {dropped} metric rows of the earlier run dropped)" if dropped else "")
            )
        if checkpoint is not None:
            restore_custom_states(self.custom, checkpoint, self.saved_states)
            self.window.restore(state.log_window)  # a log window the checkpoint cut in two
            self._load_state(checkpoint)
            accelerator.step = 0  # checkpoints sit at accumulation boundaries
            if state.phase >= 0:  # per-phase recipe state (miner override, AOQ offline negatives)
                self.recipe.resume_phase(state.phase, config.phases[state.phase], self.module)
            if main:
                trim_metrics(output_dir / "metrics.jsonl", state.step)
            accelerator.print(f"resumed from {checkpoint} at step {state.step}")
        elif main and any(p.init == "initial" for p in config.phases[1:]):
            self.recipe.tags_model(self.module).save_pretrained(
                phase_dir(output_dir, -1, "initial")
            )
            self.recipe.save_extras(phase_dir(output_dir, -1, "initial"))
        accelerator.wait_for_everyone()

    def _load_state(self, checkpoint: Path) -> None:
        """``accelerator.load_state`` (the files an inexact resume leaves out replaced by
        fresh states), then a check that the random states in force are the checkpoint's."""
        accelerator = self.accelerator
        left_out = {p.name for p in self.unrestored}
        fresh: dict[str, Any] = {}
        if OPTIMIZER_FILE in left_out:  # a fresh optimizer, at the restored schedule's lr
            fresh[OPTIMIZER_FILE] = self._fresh_optimizer_state
        if SCALER_FILE in left_out and accelerator.scaler is not None:
            fresh[SCALER_FILE] = lambda path: torch.save(accelerator.scaler.state_dict(), path)
        try:
            with accelerate_view(checkpoint, left_out - set(fresh), fresh) as view:
                accelerator.load_state(str(view))
        except (OSError, RuntimeError, ValueError, KeyError, EOFError) as err:
            raise ConfigError(
                f"resume_from: {checkpoint}: its state could not be restored ({first_line(err)})"
                "; resume from an earlier checkpoint, or start a new output_dir"
            ) from None
        rng = f"random_states_{accelerator.process_index}.pkl"
        differ = rng_differs(self.saved_rng, accelerator.device) if self.saved_rng else []
        why = f"not applied: the {', '.join(differ)} generators kept their seeded state"
        found = [problem(rng, why)] if differ else []
        found = self._agreed(found)
        if found and not self.config.allow_inexact_resume:
            raise ConfigError(refusal(checkpoint, found, earlier_checkpoint(checkpoint)))
        self.unrestored += found
        if self.unrestored and self.main:
            print(inexact_warning(checkpoint, self.unrestored), file=sys.stderr, flush=True)

    def _fresh_optimizer_state(self, path: Path) -> None:
        state = self.optimizer.state_dict()
        for group, lr in zip(state["param_groups"], self.scheduler.get_last_lr()):
            group["lr"] = lr
        torch.save(state, path)

    def start(self) -> None:
        """Trackers, phase bounds, the step to stop at, the progress bar and the timer."""
        config, state = self.config, self.state
        if self.use_tb:
            self.accelerator.init_trackers("tags")
        self.tracker = JsonlTracker(self.output_dir / "metrics.jsonl", enabled=self.main)
        self.steps = [p.steps for p in config.phases]
        self.bounds = phase_bounds(self.steps)
        self.total = sum(self.steps)
        self.stop = min(self.total, config.max_steps) if config.max_steps else self.total
        self.keep_best = config.eval.keep_best or bool(config.eval.patience)
        # a run that stopped early stays stopped when resumed
        self.early_stopped = bool(config.eval.patience) and state.stale >= config.eval.patience
        if self.early_stopped:
            self.stop = state.step
        self.progress = tqdm(
            total=self.total,
            initial=state.step,
            disable=not (self.main and config.progress_bar),
            desc="train",
        )
        self.timer = StageTimer()  # time/data, time/step, time/backward (+ the recipe's stages)
        self.bad_window = False  # a micro batch of the current accumulation window had a bad loss
        self.last: dict[str, float] = {}
        self.saved: Path | None = self.checkpoint

    # ------------------------------------------------------------------ step loop
    def loop(self) -> None:
        """Epochs of micro-batches until the step to stop at."""
        state = self.state
        while state.step < self.stop:
            if state.batch_in_epoch == 0:
                self.recipe.start_epoch(state.epoch)
            if self._run_epoch():
                state.epoch += 1
                state.batch_in_epoch = 0

    def _run_epoch(self) -> bool:
        """The epoch's batches from the saved position; False when it stopped inside."""
        state, accelerator = self.state, self.accelerator
        epoch_loader = (
            accelerator.skip_first_batches(self.loader, state.batch_in_epoch)
            if state.batch_in_epoch
            else self.loader
        )
        # the prepared loader keeps its own epoch counter (0 in a fresh process) and passes
        # it to the sampler when iterated: set it from the checkpointed position
        epoch_loader.set_epoch(state.epoch)
        self.sampler.set_epoch(state.epoch)
        for batch in timed_iter(epoch_loader, self.timer, "data"):
            if state.phase != phase_of(state.step, self.steps):
                self.begin_phase(phase_of(state.step, self.steps))
            phase = self.config.phases[state.phase]
            out = self._micro_step(batch, phase)
            state.batch_in_epoch += 1
            if not self.bad_window:
                self.window.add({"loss/total": out.loss, **out.metrics, **self.timer.metrics()})
            if not accelerator.sync_gradients:
                continue
            if self.bad_window:
                self._skip_window(phase)
            self._after_optimizer_step()
            self._step_hooks(phase)
            if state.step >= self.stop:
                return False
        return True

    def _micro_step(self, batch: Any, phase: Any) -> StepOutput:
        """The recipe's step under a position-keyed seed, then backward (the optimizer steps
        at the accumulation window's sync)."""
        config, state, accelerator = self.config, self.state, self.accelerator
        ctx = StepContext(state.step, state.phase, phase, self.recipe.weights(phase), config.seed)
        # dropout & co.: the global RNG is a pure function of the data position, so a
        # resumed run replays it exactly (creating a data iterator draws from it too)
        key = ctx.generator(state.epoch, state.batch_in_epoch, accelerator.process_index)
        torch.manual_seed(key.initial_seed())
        with accelerator.accumulate(self.module):
            with self.timer("step"):
                try:
                    out = self.recipe.training_step(self.module, batch, ctx)
                except NonFiniteError as err:  # e.g. the synthetic sampler's MLM logits
                    self.progress.close()
                    raise NonFiniteLossError(
                        f"{err} at step {state.step + 1} (phase {state.phase} "
                        f"{phase.name!r}): training stopped; last good checkpoint: "
                        f"{self.saved or 'none'}. Lower the lr or check the inputs"
                    ) from err
            with self.timer("backward"):  # with clipping and the optimizer step
                self._backward(out.loss)
        return out

    def _backward(self, loss: torch.Tensor) -> None:
        """Backward and clipping of a finite loss, the optimizer step unless the window had a
        non-finite loss, ``zero_grad``."""
        accelerator, max_norm = self.accelerator, self.config.optim.max_grad_norm
        if _all_finite(loss, accelerator):
            accelerator.backward(loss)
            if accelerator.sync_gradients and max_norm:
                accelerator.clip_grad_norm_(self.module.parameters(), max_norm)
        else:
            self.bad_window = True
        if not self.bad_window:
            self.optimizer.step()
        self.optimizer.zero_grad()  # at the sync step: drops a bad window's gradients

    def _skip_window(self, phase: Any) -> None:
        """Count a window with a non-finite loss as skipped; stop past ``max_nonfinite_steps``."""
        config, state = self.config, self.state
        self.bad_window = False
        state.skipped += 1
        where = (
            f"step {state.step + 1} (phase {state.phase} {phase.name!r}, epoch "
            f"{state.epoch}, batch {state.batch_in_epoch - 1})"
        )
        if state.skipped > config.max_nonfinite_steps:
            self.progress.close()
            raise NonFiniteLossError(
                f"non-finite loss at {where}: training stopped, the weights were not "
                f"updated with it; last good checkpoint: {self.saved or 'none'}. Lower the "
                "lr, check the inputs, or allow skipping with max_nonfinite_steps=N"
            )
        self.accelerator.print(
            f"warning: non-finite loss at {where}: step skipped "
            f"({state.skipped} of max_nonfinite_steps={config.max_nonfinite_steps})"
        )

    def _after_optimizer_step(self) -> None:
        """Advance the schedule and the step count; log the metric window when due."""
        state = self.state
        lr = self.scheduler.get_last_lr()[0]
        self.scheduler.step()
        state.step += 1
        self.recipe.after_optimizer_step(self.module)
        self.progress.update(1)
        if state.step % self.config.log_every == 0 or state.step == self.stop:
            self.last = self.window.reduce(self.accelerator)
            row = {"lr": lr, "phase": state.phase, "epoch": state.epoch, **self.last}
            self.tracker.log(row, state.step)
            if self.use_tb:
                self.accelerator.log(row, step=state.step)
            self.progress.set_postfix(loss=f"{self.last.get('loss/total', float('nan')):.4f}")

    # ------------------------------------------------------------------ hooks
    def _step_hooks(self, phase: Any) -> None:
        """After an optimizer step: evaluation, the phase's model, checkpoints, when due."""
        config, state = self.config, self.state
        phase_end = state.step == self.bounds[state.phase][1]
        every = config.eval.every and state.step % config.eval.every == 0
        if self.eval_sets is not None and (phase_end or every):
            self._evaluate()
        if phase_end:
            self.save_model(phase_dir(self.output_dir, state.phase, phase.name))
        if (
            (config.save_every and state.step % config.save_every == 0)
            or phase_end
            or (state.step == self.stop)
        ):
            self.saved = self.save_checkpoint()

    def _evaluate(self) -> None:
        """Score the eval sets, log them, track the best (early stopping sets the stop)."""
        state, accelerator = self.state, self.accelerator
        scores = evaluate(
            self.recipe.tags_model(self.module), self.eval_sets, self.config.eval, accelerator
        )
        self.last = {**self.last, **scores}
        self.tracker.log({"phase": state.phase, **scores}, state.step)
        if self.use_tb:
            accelerator.log(scores, step=state.step)
        if self.track_best(scores):
            self.stop = state.step  # early stopping: checkpoint and leave below
            self.early_stopped = True

    def begin_phase(self, index: int) -> None:
        """Start phase ``index``: the recipe's hook, its ``init`` weights, a cleared optimizer."""
        config, recipe, module = self.config, self.recipe, self.module
        phase = config.phases[index]
        # before the weights reset: the module still holds the previous phase's model (AOQ
        # ranks the training set with round 1's model, then round 2 restarts from `initial`)
        recipe.start_phase(index, phase, module)
        if index > 0 and phase.init != "continue":
            source = (
                phase_dir(self.output_dir, index - 1, config.phases[index - 1].name)
                if phase.init == "previous"
                else phase_dir(self.output_dir, -1, "initial")
            )
            _load_weights(recipe.tags_model(module), source)
            recipe.load_extras(source)  # a BLIP's TAGS heads, saved beside it
            self.optimizer.optimizer.state.clear()
        recipe.phase_weights_ready(index, phase, module)
        self.state.phase = index

    def check_weights(self) -> None:
        """Stop (:class:`NonFiniteWeightsError`, exit 3) before saving unusable weights: the
        loss guard only sees a step's loss, computed before its update."""
        if _weights_usable(self.module, self.accelerator):
            return
        self.progress.close()
        state = self.state
        phase = self.config.phases[max(state.phase, 0)]
        raise NonFiniteWeightsError(
            f"non-finite weights after step {state.step} (phase {max(state.phase, 0)} "
            f"{phase.name!r}): NaN, infinite or overflowing float32; training stopped and "
            f"they were not saved; last good checkpoint: {self.saved or 'none'}. Lower the lr "
            "(or clip gradients: optim.max_grad_norm)"
        )

    def save_model(self, target: Path) -> None:
        """The model (with its tokenizer, and a backend's processor) as a usable folder."""
        self.check_weights()
        if self.main:
            self.recipe.tags_model(self.module).save_pretrained(target)
            self.tokenizer.save_pretrained(target)
            if self.parts is not None:  # issue 12: the processor beside it
                self.parts.save_processor(target, self.recipe)
        self.accelerator.wait_for_everyone()

    def track_best(self, scores: dict[str, float]) -> bool:
        """Update the best ``eval.metric`` (saving ``best/`` when asked); True when early
        stopping says stop."""
        config, state = self.config, self.state
        key = f"eval/{config.eval.metric}"
        if key not in scores:
            raise ConfigError(
                f"eval.metric {config.eval.metric!r} is not an evaluation metric: "
                f"{sorted(k.removeprefix('eval/') for k in scores)}"
            )
        if scores[key] > state.best:
            state.best, state.best_step, state.stale = scores[key], state.step, 0
            if self.keep_best:
                self.save_model(self.output_dir / BEST)
        else:
            state.stale += 1
        return bool(config.eval.patience) and state.stale >= config.eval.patience

    def save_checkpoint(self) -> Path:
        """A complete checkpoint of this step (accelerate's files, the custom states, the
        ``COMPLETE`` marker); the oldest beyond ``keep_checkpoints`` removed."""
        self.check_weights()
        accelerator, main, state = self.accelerator, self.main, self.state
        path = self.output_dir / CHECKPOINTS / f"step_{state.step:08d}"
        try:
            accelerator.save_state(str(path))
            state.log_window = self.window.snapshot(accelerator)
            if main:
                save_custom_states(self.custom, path)
        except Exception:  # e.g. a full disk: no half-written checkpoint left behind
            if main:
                shutil.rmtree(path, ignore_errors=True)
            raise
        accelerator.wait_for_everyone()
        if main:
            (path / COMPLETE).write_text(complete_text(path, state.step, COMPLETE))
            for old in checkpoint_dirs(self.output_dir)[: -self.config.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        accelerator.wait_for_everyone()
        return path

    # ------------------------------------------------------------------ finish
    def finish(self) -> TrainResult:
        """The run's model: the best weights after early stopping, else the last, saved in
        ``output_dir/model`` when the run reached its stop."""
        config, accelerator, state = self.config, self.accelerator, self.state
        output_dir = self.output_dir
        self.progress.close()
        tags_model = self.recipe.tags_model(self.module)
        if self.early_stopped:  # the best evaluated weights are the run's model
            accelerator.print(
                f"early stopping at step {state.step} of {self.total}: eval/{config.eval.metric} "
                f"has not improved in {state.stale} evaluations (eval.patience="
                f"{config.eval.patience}); best {state.best:.2f} at step {state.best_step}, "
                f"kept in {output_dir / BEST}"
            )
            _load_weights(tags_model, output_dir / BEST)
            self.recipe.load_extras(output_dir / BEST)
        elif state.step < self.total:  # max_steps: the weights so far, as a usable model
            accelerator.print(
                f"stopped at step {state.step} of {self.total} (max_steps): "
                f"{output_dir / 'model'} holds the weights so far; resume_from=latest continues "
                "the run"
            )
        if state.step >= self.stop:
            self.save_model(output_dir / "model")
        if self.use_tb:
            accelerator.end_training()
        return TrainResult(output_dir, state, tags_model, self.last, self.saved)


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
