"""The nvidia device on the Python side (docs/gpu.md): whether this torch can use a GPU, the
timed loop with CUDA events, the device memory torch's allocator reports, and the facts a result
records (TF32 settings, torch's CUDA and cuDNN versions). Nothing here runs on x86."""

import warnings

import torch


def device_for(name):
    """torch's device for turnkey's device name: None for x86 (the CPU path, unchanged), the
    current CUDA device for nvidia once torch says it can use it; else a RuntimeError saying in
    one line what is missing."""
    if name in (None, "", "x86"):
        return None
    if name != "nvidia":
        raise ValueError("unknown device %r (x86, nvidia)" % (name,))
    version = torch.__version__.split("+")[0]
    if getattr(torch.version, "cuda", None) is None:
        raise RuntimeError("torch %s has no CUDA (a CPU%s build: torch.version.cuda is None)"
                           % (version, "/ROCm" if getattr(torch.version, "hip", None) else ""))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    if not available:
        why = [str(w.message).strip().splitlines()[0] for w in caught if str(w.message).strip()]
        raise RuntimeError("torch %s (CUDA %s) can use no GPU: torch.cuda.is_available() is "
                           "false%s" % (version, torch.version.cuda,
                                        ": " + why[0] if why else ""))
    return torch.device("cuda", torch.cuda.current_device())


def home_device(module):
    """Where the module's parameters live before turnkey moves it (the CPU for a script's model
    that never left it)."""
    for tensor in list(module.parameters()) + list(module.buffers()):
        return tensor.device
    return torch.device("cpu")


def _tf32():
    """Whether float32 matmuls and cuDNN convolutions may use TF32 (10 mantissa bits). Read
    through the settings every torch since 1.12 has (newer ones warn that they prefer
    fp32_precision, which they keep in step)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matmul = torch.get_float32_matmul_precision() != "highest"
        try:
            matmul = matmul or bool(torch.backends.cuda.matmul.allow_tf32)
        except (AttributeError, RuntimeError):
            pass
        try:
            cudnn = bool(torch.backends.cudnn.allow_tf32)
        except (AttributeError, RuntimeError):
            cudnn = False
    return matmul, cudnn


def facts(device):
    """The result fields (TF32) and the environment's facts of the GPU as torch sees it."""
    props = torch.cuda.get_device_properties(device)
    matmul, cudnn = _tf32()
    cudnn_version = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "tf32_matmul": matmul,
        "tf32_cudnn": cudnn,
        "device_environment": {
            "torch_cuda_version": torch.version.cuda,
            "cudnn_version": str(cudnn_version) if cudnn_version else "",
            "torch_gpu_name": props.name,
            "gpu_compute_capability": "%d.%d" % (props.major, props.minor),
            "gpu_memory_bytes": int(props.total_memory),
        },
    }


def memory(device):
    """Peaks of torch's caching allocator since the session was prepared: bytes its tensors took
    (weights, inputs, activations, workspaces) and bytes it held from the driver. The CUDA
    context and libraries' own memory are in neither."""
    return {
        "device_memory_allocated_bytes": int(torch.cuda.max_memory_allocated(device)),
        "device_memory_reserved_bytes": int(torch.cuda.max_memory_reserved(device)),
    }


def timed_calls(call, n):
    """n calls of `call`, each between two CUDA events recorded on the current stream and
    synchronised before the next call: the GPU time from the first event (recorded just before
    the call is made on the host) to the completion of everything the call queued; a call whose
    host side is slower than its kernels is timed with its host side. Samples in ns; returns
    them and the last call's result."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    samples = [0] * n
    out = None
    torch.cuda.synchronize()  # nothing queued before (input copies) counts in the first call
    for i in range(n):
        start.record()
        out = call()
        end.record()
        end.synchronize()
        samples[i] = int(round(start.elapsed_time(end) * 1e6))
    return samples, out
