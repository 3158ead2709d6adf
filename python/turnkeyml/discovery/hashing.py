"""The model hash: sha256 over structure, forward code, weights and input signature.

docs/hashing.md is the definition; keep the two in step (bump HASH_VERSION on any change).
"""

import hashlib
import inspect
import io
import os
import re
import textwrap
import tokenize

import torch

HASH_VERSION = b"turnkey-model-hash-v2"
CHUNK_BYTES = 1 << 24  # weights are hashed in 16 MiB chunks (see _chunk_digests)
PARALLEL_MIN_BYTES = 1 << 25

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def class_path(cls):
    """`module.QualName` of a class, exactly as Python names it (`__main__` left as is)."""
    return "%s.%s" % (cls.__module__, cls.__qualname__)


def _field(h, tag, payload):
    """One length-prefixed field, so that no two different field lists hash the same bytes."""
    tag = tag.encode()
    h.update(len(tag).to_bytes(8, "little"))
    h.update(tag)
    h.update(len(payload).to_bytes(8, "little"))
    h.update(payload)


def _render_const(value, out):
    if inspect.iscode(value):
        _render_code(value, out)
    elif isinstance(value, tuple):
        out.append("(")
        for item in value:
            _render_const(item, out)
            out.append(",")
        out.append(")")
    elif isinstance(value, frozenset):
        # Set iteration order depends on string hash randomisation: sort the renderings.
        rendered = []
        for item in value:
            part = []
            _render_const(item, part)
            rendered.append("".join(part))
        out.append("{" + ",".join(sorted(rendered)) + "}")
    elif value is None or value is Ellipsis or isinstance(value, (bool, int, float, complex,
                                                                   str, bytes)):
        out.append("%s:%r" % (type(value).__name__, value))
    else:  # never a repr: it may hold a memory address
        out.append("<%s>" % type(value).__qualname__)


def _render_code(code, out):
    out.append("code[")
    out.append(code.co_code.hex())
    out.append("|names:" + ",".join(code.co_names))
    out.append("|consts:")
    for const in code.co_consts:
        _render_const(const, out)
        out.append(";")
    out.append("]")


# Modules of these packages are named by class: their forward is the library's, which changes with
# its version (a torch upgrade must not rename every model).
_LIBRARIES = ("torch", "torchvision")
_SKIPPED_TOKENS = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}

# How torch's own modules print their settings changed between 1.13 and 2.15 without the model
# changing (measured over every torch.nn class): normalization layers gained a `bias=` item
# (whether the bias exists is in the parameter table anyway), strings gained quotes
# (`mode='mean'`), and some floats a `.0` (`threshold=20.0`). The printing of torch 1.13 is
# kept: these rewrites apply to torch's and torchvision's classes only.
_NORM_CLASS_NAMES = ("_NormBase", "LayerNorm", "GroupNorm", "RMSNorm")
_BIAS_ITEM = re.compile(r", bias=(True|False)(?=,|$)")
_QUOTED_VALUE = re.compile(r"=(['\"])([^'\"]*)\1")
_WHOLE_FLOAT = re.compile(r"=(-?\d+)\.0(?=,|$|\))")


def _portable_extra_repr(module):
    """module.extra_repr(), printed as torch 1.13 prints it for torch's own modules."""
    extra = module.extra_repr()
    if not extra or type(module).__module__.split(".")[0] not in _LIBRARIES:
        return extra
    if any(c.__name__ in _NORM_CLASS_NAMES for c in type(module).__mro__):
        extra = _BIAS_ITEM.sub("", extra)
    extra = _QUOTED_VALUE.sub(r"=\2", extra)
    return _WHOLE_FLOAT.sub(r"=\1", extra)


def _source_rendering(function):
    """The source of `function` as its tokens, one space apart, without comments, blank lines
    or indentation widths: the same text under every Python version (unlike the bytecode).
    None when the source cannot be read (code built with exec, a deleted file)."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    lines = source.splitlines(keepends=True)
    out = []
    fstring_start = None  # Python >= 3.12 splits f-strings into parts: keep them as written
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            name = tokenize.tok_name.get(token.type, "")
            if name == "FSTRING_START" and fstring_start is None:
                fstring_start = token.start
                depth = 0
            if fstring_start is not None:
                depth += {"FSTRING_START": 1, "FSTRING_END": -1}.get(name, 0)
                if depth == 0:
                    (r0, c0), (r1, c1) = fstring_start, token.end
                    text = "".join(lines[r0 - 1:r1])
                    out.append(text[c0:len(text) - len(lines[r1 - 1]) + c1])
                    fstring_start = None
                continue
            if token.type in _SKIPPED_TOKENS:
                continue
            if token.type == tokenize.NEWLINE:
                out.append("\n")
            elif token.type == tokenize.INDENT:
                out.append("<indent>")
            elif token.type == tokenize.DEDENT:
                out.append("<dedent>")
            else:
                out.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return " ".join(out)


def forward_rendering(module):
    """A stable text for the code of module.forward: no addresses, file names or line numbers,
    nothing that differs between Python or torch versions (docs/hashing.md)."""
    cls = type(module)
    if cls.__module__.split(".")[0] in _LIBRARIES:
        return "library:" + class_path(cls)
    forward = getattr(module, "forward", None)
    forward = getattr(forward, "__func__", forward)
    try:
        forward = inspect.unwrap(forward)
    except ValueError:
        pass
    if getattr(forward, "__code__", None) is not None:
        source = _source_rendering(forward)
        if source is not None:
            return "source:" + source
    code = getattr(forward, "__code__", None)
    if code is not None:
        out = []
        _render_code(code, out)
        return "".join(out)
    script_code = getattr(module, "code", None)  # TorchScript modules
    if isinstance(script_code, str):
        return "torchscript:" + script_code
    return "opaque:" + getattr(forward, "__qualname__", type(forward).__qualname__)


def _tensor_bytes(tensor):
    if tensor.is_meta:  # no data (a model built on the meta device, or offloaded)
        return b""
    try:
        tensor = tensor.detach().cpu().contiguous()
    except (RuntimeError, NotImplementedError):  # a tensor subclass that cannot be read
        return b""
    try:
        return tensor.numpy().reshape(-1).view("uint8")
    except (TypeError, RuntimeError):
        pass
    # dtypes numpy lacks (bfloat16, ...): reinterpret as same-width integers
    for as_int in (torch.int16, torch.int32, torch.int64, torch.uint8):
        try:
            if tensor.element_size() == torch.empty((), dtype=as_int).element_size():
                return tensor.view(as_int).numpy().reshape(-1).view("uint8")
        except (TypeError, RuntimeError):
            break
    return b""  # e.g. quantized or meta tensors: hashed by name, dtype and shape only


def _tensor_header(name, tensor):
    return ("%s|%s|%s" % (name, str(tensor.dtype).replace("torch.", ""),
                          ",".join(str(d) for d in tensor.shape))).encode()


def _chunk_digests(arrays):
    """For each byte array, the concatenated sha256 digests of its CHUNK_BYTES chunks.

    Chunks make the weights hashable in parallel (hashlib releases the GIL): without SHA
    instructions sha256 runs at ~170 MB/s per core here.
    """
    chunks = []
    for array in arrays:
        view = memoryview(array).cast("B") if len(array) else memoryview(b"")
        chunks.append([view[i:i + CHUNK_BYTES] for i in range(0, len(view), CHUNK_BYTES)])
    flat = [c for per_array in chunks for c in per_array]
    digest = lambda chunk: hashlib.sha256(chunk).digest()
    total = sum(len(c) for c in flat)
    if total >= PARALLEL_MIN_BYTES and (os.cpu_count() or 1) > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
            digests = iter(list(pool.map(digest, flat)))
    else:
        digests = iter([digest(c) for c in flat])
    return [b"".join(next(digests) for _ in per_array) for per_array in chunks]


def _indent(text, spaces):
    lines = text.split("\n")
    return lines[0] if len(lines) == 1 else \
        lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def structure(module):
    """The printed structure of `module` as torch 1.x's Module.__repr__ writes it: every child
    listed. torch >= 2.0 collapses equal siblings of a ModuleList ("(0-1): 2 x Block(...)"), so
    repr() itself differs between versions. A class with a __repr__ of its own (not torch's)
    keeps it."""
    if module is None:
        return "None"
    own_repr = getattr(type(module).__repr__, "__module__", None) or ""
    if not isinstance(module, torch.nn.Module) or own_repr.split(".")[0] not in _LIBRARIES:
        return repr(module)  # a user's own __repr__ (torch's, ModuleList's included, are not)
    extra = _portable_extra_repr(module)
    extra_lines = extra.split("\n") if extra else []
    child_lines = ["(%s): %s" % (key, _indent(structure(child), 2))
                   for key, child in module._modules.items()]
    text = module._get_name() + "("
    if extra_lines or child_lines:
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        else:
            text += "\n  " + "\n  ".join(extra_lines + child_lines) + "\n"
    return text + ")"


def _rendering_key(module):
    """What forward_rendering(module) depends on: its class (library classes render by name) and
    the code of its unwrapped forward. Not the wrapper's code: forwards that share a decorator
    (transformers wraps many in one) share the wrapper's code object, not their own."""
    forward = getattr(module, "forward", None)
    forward = getattr(forward, "__func__", forward)
    try:
        forward = inspect.unwrap(forward)
    except ValueError:
        pass
    code = getattr(forward, "__code__", None)
    return (type(module), code) if code is not None else id(module)


def model_hash(module, inputs):
    """Hex sha256 of `module` called with `inputs` (the protocol's described input list)."""
    h = hashlib.sha256()
    _field(h, "version", HASH_VERSION)
    _field(h, "repr", _ADDRESS.sub(" at 0x?", structure(module)).encode())
    renderings = {}
    for name, sub in module.named_modules():
        _field(h, "module", ("%s|%s" % (name, class_path(type(sub)))).encode())
        key = _rendering_key(sub)
        if key not in renderings:
            renderings[key] = hashlib.sha256(forward_rendering(sub).encode()).hexdigest()
        _field(h, "forward", ("%s|%s" % (name, renderings[key])).encode())
    tensors = [("parameter", name, t) for name, t in module.named_parameters()]
    tensors += [("buffer", name, t) for name, t in module.named_buffers()]
    digests = _chunk_digests([_tensor_bytes(t) for _, _, t in tensors])
    for (tag, name, tensor), data in zip(tensors, digests):
        _field(h, tag, _tensor_header(name, tensor))
        _field(h, "data", data)
    for item in inputs:
        shape = "null" if item["shape"] is None else ",".join(str(d) for d in item["shape"])
        _field(h, "input", ("%s|%s|%s" % (item["name"], item["dtype"], shape)).encode())
    return h.hexdigest()
