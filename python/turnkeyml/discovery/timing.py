"""Timing of live models on the Python side (torch-eager, torch-compiled) and tracing for the
torchscript runtime. The C++ core drives the loop in batches (docs/measurement.md): each
`bench_run` command runs n calls, each between two perf_counter_ns reads (on nvidia two CUDA
events, cuda.py), and returns the raw samples; statistics, warm-up and stopping rules are the
core's."""

import os
import time

import torch

from . import cuda, export, inputs


def _pin_all_threads(cpus):
    """Pins every thread of this process (torch's pools exist already) to `cpus`."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass  # a thread that ended meanwhile


def _version_tuple(version):
    parts = []
    for piece in version.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _parse_compile_args(given):
    """torch.compile's keyword arguments from --rt-args strings: backend (default inductor),
    mode, fullgraph (true/false), dynamic (true/false/none)."""
    flags = {"true": True, "1": True, "false": False, "0": False}
    kwargs = {"backend": given.get("backend") or "inductor"}
    if given.get("mode"):
        kwargs["mode"] = given["mode"]
    for key, allow_none in (("fullgraph", False), ("dynamic", True)):
        if key not in given:
            continue
        value = str(given[key]).lower()
        if allow_none and value in ("none", "auto"):
            kwargs[key] = None
        elif value in flags:
            kwargs[key] = flags[value]
        else:
            raise ValueError("--rt-args %s=%s: expected true or false%s"
                             % (key, given[key], " or none" if allow_none else ""))
    unknown = set(given) - {"backend", "mode", "fullgraph", "dynamic"}
    if unknown:
        raise ValueError("unknown torch.compile argument(s): %s" % ", ".join(sorted(unknown)))
    return kwargs


def _compile(module, args, kwargs, given):
    """torch.compile(module) and its first call, which compiles: returns the compiled callable
    and its facts (compile time apart from steady-state latency, graphs, graph breaks)."""
    if not hasattr(torch, "compile") or _version_tuple(torch.__version__) < (2, 0):
        raise RuntimeError("torch-compiled needs PyTorch >= 2.0, found %s"
                           % torch.__version__.split("+")[0])
    options = _parse_compile_args(given)
    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters
    dynamo.reset()
    counters.clear()
    compiled = torch.compile(module, **options)
    flags = [(m, m.training) for m in module.modules()]
    module.eval()
    start = time.perf_counter()
    try:
        # The same mode as the timed calls (inference_mode, eval), so the guards hold and no
        # timed call recompiles.
        with torch.inference_mode():
            compiled(*args, **kwargs)
    finally:
        for m, training in flags:
            m.training = training
    compile_s = time.perf_counter() - start
    reasons = counters.get("graph_break", {})
    facts = {
        "compile_s": compile_s,
        "compile_backend": options["backend"],
        "compile_mode": options.get("mode") or "default",
        "compile_fullgraph": bool(options.get("fullgraph", False)),
        "compile_dynamic": str(options.get("dynamic", "auto")).lower() if "dynamic" in options
        else "auto",
        "compiled_graphs": int(counters.get("stats", {}).get("unique_graphs", 0)),
        "graph_breaks": int(sum(reasons.values())),
        "graph_break_reasons": sorted("%s (x%d)" % (str(r).splitlines()[0][:200], n)
                                      for r, n in reasons.items()),
    }
    return compiled, facts


def _self_us(event, device):
    """An op's self time in µs: CPU time on x86, its kernels' time on a GPU (torch >= 2.4 names
    it device time, older ones CUDA time)."""
    if device is None:
        return event.self_cpu_time_total
    return getattr(event, "self_device_time_total", None) or getattr(
        event, "self_cuda_time_total", 0)


class Bench:
    """One prepared live model: its call with fresh copies of the captured inputs."""

    def __init__(self, entry, mode, threads, cpus, compile_args=None, device=None):
        self.mode = mode
        module = entry.module
        # nvidia: the live module is moved to the GPU in place (release() moves it back) and runs
        # on copies of the captured inputs there.
        self.device = cuda.device_for(device)
        self._home = cuda.home_device(module)
        # Benchmarks measure inference in eval mode (as export does); the module's own training
        # flags are put back after every batch, outside the timed region.
        self._flags = [(m, m.training) for m in module.modules()]
        self._module = module
        if threads and threads > 0:
            torch.set_num_threads(int(threads))
        # Pinned only while a batch runs (every thread of the process: torch's pools exist
        # already), then put back, so later work of the script's process is not confined.
        self._cpus = set(int(c) for c in cpus) if cpus else None
        self._unpinned = os.sched_getaffinity(0)
        if mode not in ("eager", "compiled"):
            raise ValueError("unknown mode %r (eager, compiled)" % (mode,))
        self.cuda = None
        self._last = None
        try:
            if self.device is not None:
                torch.cuda.reset_peak_memory_stats(self.device)
                self.cuda = cuda.facts(self.device)
                module.to(self.device)
            self._prepare_call(entry, mode, compile_args)
        except BaseException:
            self.release()  # a failed prepare leaves the model where the script had it
            raise
        self.threads = torch.get_num_threads()

    def _prepare_call(self, entry, mode, compile_args):
        """The timed call: the module (compiled for `compiled`) on fresh copies of the captured
        inputs, on the session's device."""
        device = self.device
        copy = (lambda t: t.clone()) if device is None else (lambda t: t.to(device, copy=True))
        args, kwargs = inputs.copy_call((entry.captured_args, entry.captured_kwargs), copy)
        target = self._module
        self.compiled = None
        if mode == "compiled":
            target, self.compiled = _compile(self._module, args, kwargs, compile_args or {})
        if inputs.has_state((args, kwargs)):
            # A cache object (transformers' DynamicCache) grows with every call: each timed call
            # gets its own copy of the captured one (a deep copy, timed with the call).
            self._call = lambda: _call_with_copies(target, (args, kwargs))
        else:
            self._call = lambda: target(*args, **kwargs)

    def run(self, n, empty):
        call = (lambda: None) if empty else self._call
        clock = time.perf_counter_ns
        samples = [0] * n
        out = None
        self._module.eval()
        if self._cpus:
            _pin_all_threads(self._cpus)
        try:
            with torch.inference_mode():
                if self.device is not None:
                    samples, out = cuda.timed_calls(call, n)
                else:
                    for i in range(n):
                        start = clock()
                        out = call()
                        samples[i] = clock() - start
        finally:
            for m, training in self._flags:
                m.training = training
            if self._cpus:
                _pin_all_threads(self._unpinned)
        if not empty:
            self._last = out
        return samples

    def device_memory(self):
        """nvidia: the allocator's peaks since prepare (cuda.memory); None on x86."""
        return cuda.memory(self.device) if self.device is not None else None

    def release(self):
        """Puts the live module back where the script had it (nvidia moved it) and frees what
        this session held on the GPU: the script, and the next runtime, see the model as before."""
        if self.device is None:
            return
        self._call = self._last = None
        self._module.to(self._home)
        self.device = None
        torch.cuda.empty_cache()

    def profile(self, n, path):
        """--profile: one warm-up call, then n calls under torch.profiler (CPU activities, and
        CUDA on nvidia), whose Chrome trace is written to `path`. Returns each op's self
        (exclusive) time over the n calls (CPU time; on nvidia its kernels' time) and the wall
        time of the n calls (profiler overhead included)."""
        from torch import profiler

        activities = [profiler.ProfilerActivity.CPU]
        if self.device is not None:
            activities.append(profiler.ProfilerActivity.CUDA)
        self._module.eval()
        if self._cpus:
            _pin_all_threads(self._cpus)
        try:
            with torch.inference_mode():
                self._call()
                with profiler.profile(activities=activities) as prof:
                    start = time.perf_counter_ns()
                    for _ in range(n):
                        self._call()
                    if self.device is not None:
                        torch.cuda.synchronize()
                    run_ns = time.perf_counter_ns() - start
        finally:
            for m, training in self._flags:
                m.training = training
            if self._cpus:
                _pin_all_threads(self._unpinned)
        tmp = "%s.tmp%d" % (path, os.getpid())
        prof.export_chrome_trace(tmp)
        os.replace(tmp, path)
        ops = [{"op_type": e.key, "self_ms": _self_us(e, self.device) / 1000.0, "count": e.count}
               for e in prof.key_averages() if _self_us(e, self.device) > 0]
        return ops, run_ns / 1e6

    def save_outputs(self, io_dir):
        if self._last is None:
            raise ValueError("no run yet")
        paths = []
        for n, tensor in enumerate(inputs.tensors_of(self._last)):
            path = os.path.join(io_dir, "output_%d.pb" % n)
            export._save_tensor(path, "output_%d" % n, tensor)
            paths.append(path)
        return paths


def _call_with_copies(target, call):
    """target called with its own copy of the call's state leaves (tensors shared)."""
    args, kwargs = inputs.copy_call(call, lambda t: t)
    return target(*args, **kwargs)


def reference_io(entry, io_dir):
    """Saves the captured inputs (flat, in call order) and the eager outputs for them as
    input_N.pb / output_N.pb: the correctness reference when no export ran."""
    module = entry.module
    flags = [(m, m.training) for m in module.modules()]
    args, kwargs = inputs.copy_call((entry.captured_args, entry.captured_kwargs),
                                    lambda t: t.clone())
    flat_in = inputs.tensors_of((args, kwargs))
    try:
        module.eval()
        with torch.no_grad():
            out = module(*args, **kwargs)
    finally:
        for m, training in flags:
            m.training = training
    saved_in, saved_out = [], []
    for n, tensor in enumerate(flat_in):
        path = os.path.join(io_dir, "input_%d.pb" % n)
        export._save_tensor(path, "input_%d" % n, tensor)
        saved_in.append(path)
    for n, tensor in enumerate(inputs.tensors_of(out)):
        path = os.path.join(io_dir, "output_%d.pb" % n)
        export._save_tensor(path, "output_%d" % n, tensor)
        saved_out.append(path)
    return saved_in, saved_out


def trace(entry, path, io_dir):
    """torch.jit.trace of the model's call with its captured inputs as flat positional tensors
    (the wrapper export uses), saved to `path`; the flat inputs are saved as
    io_dir/input_N.pb in the traced module's argument order."""
    module = entry.module
    flags = [(m, m.training) for m in module.modules()]
    args, kwargs = inputs.copy_call((entry.captured_args, entry.captured_kwargs),
                                    lambda t: t.clone())
    try:
        module.eval()
        if isinstance(module, torch.jit.ScriptModule):
            if kwargs or not all(isinstance(a, torch.Tensor) for a in args):
                raise ValueError("a TorchScript module can only be run when called with "
                                 "positional tensor arguments")
            traced, feed = module, tuple(inputs.tensors_of(args))
        else:
            target = export._FlatCall(module, args, kwargs)
            target.training = False
            feed = tuple(inputs.tensors_of((args, kwargs)))
            with torch.no_grad(), export._captured_output():
                traced = torch.jit.trace(target, feed, check_trace=False)
        tmp = "%s.tmp%d" % (path, os.getpid())
        traced.save(tmp)
        os.replace(tmp, path)
    finally:
        for m, training in flags:
            m.training = training
    saved = []
    for n, tensor in enumerate(feed):
        pb = os.path.join(io_dir, "input_%d.pb" % n)
        export._save_tensor(pb, "input_%d" % n, tensor)
        saved.append(pb)
    return saved
