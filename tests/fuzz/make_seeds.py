#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/ from the project's own files and small files made
here with NumPy and onnx (Debian's /usr/bin/python3). Run once; the seeds are committed, so that
the fuzz CTest replays the same bytes everywhere. Usage: make_seeds.py [OUT_DIR]."""
import io
import json
import os
import shutil
import struct
import sys
import zipfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fuzz", "corpus")
TESTDATA = "/usr/share/libonnx-testdata/data/node"


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def npz(compressed=False, **arrays):
    b = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(b, **arrays)
    return b.getvalue()


def npz_seeds():
    put("npz", "sample_inputs.npz", open(os.path.join(ROOT, "examples/cli/onnx/sample_inputs.npz"), "rb").read())
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    put("npz", "f32.npz", npz(x=x, mask=np.array([True, False])))
    put("npz", "compressed.npz", npz(True, x=x, ids=np.arange(5, dtype=np.int64)))
    put("npz", "fortran.npz", npz(x=np.asfortranarray(x.reshape(2, 3, 2))))
    put("npz", "strings.npz", npz(u=np.array(["a", "\u00e9t\u00e9", "\U0001f600"]), s=np.array([b"ab", b"c"])))
    put("npz", "bigendian.npz", npz(x=x.astype(">f8"), h=np.arange(3, dtype=">f2")))
    put("npz", "sequence.npz", npz(**{"x[0]": x, "x[1]": x[:1]}))
    put("npz", "empty.npz", npz(e=np.zeros((0, 3), np.float32), scalar=np.float64(2.5)))
    put("npz", "ints.npz", npz(a=np.arange(4, dtype=np.int8), b=np.arange(4, dtype=np.uint16),
                               c=np.arange(4, dtype=np.uint32), d=np.arange(4, dtype=np.uint64)))
    put("npz", "v1.npy", npy(x))
    put("npz", "fortran.npy", npy(np.asfortranarray(x)))
    hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
    hdr += b" " * (64 - 10 - len(hdr) - 1) + b"\n"
    put("npz", "v2.npy", b"\x93NUMPY\x02\x00" + len(hdr).to_bytes(4, "little") + hdr + b"\0" * 8)
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", npy(x))
        z.comment = b"a comment"
    put("npz", "comment.npz", b.getvalue())
    npz_container_seeds(npy(x))


class Unseekable(io.RawIOBase):
    """A stream zipfile cannot seek back in: it writes data descriptors (flag bit 3)."""

    def __init__(self, f):
        self.f = f

    def writable(self):
        return True

    def write(self, data):
        return self.f.write(data)


def zip64_end(member, data, flags=0):
    """One stored member behind a zip64 end record and its locator (what writers of more than
    65535 members use), with the general-purpose `flags` given (bit 0: encrypted)."""
    name, crc = member.encode(), zlib.crc32(data)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, 0, 0, 0, crc, len(data), len(data),
                        len(name), 0) + name + data
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 20, flags, 0, 0, 0, crc, len(data),
                          len(data), len(name), 0, 0, 0, 0, 0, 0) + name
    out = local + central
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, 1, 1, len(central), len(local))
    out += struct.pack("<IIQI", 0x07064B50, 0, len(local) + len(central), 1)
    return out + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)


def npz_container_seeds(x_npy):
    """The zip records libzip reads that NumPy's own archives lack (a data descriptor, a zip64 end
    record, bzip2, the encryption flag), so mutations start from them."""
    b = io.BytesIO()
    np.savez_compressed(Unseekable(b), x=np.arange(6, dtype=np.float32), y=np.ones((2, 2)))
    put("npz", "data_descriptor.npz", b.getvalue())
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", compression=zipfile.ZIP_BZIP2) as z:
        z.writestr("x.npy", x_npy)
    put("npz", "bzip2.npz", b.getvalue())
    put("npz", "zip64_end.npz", zip64_end("x.npy", x_npy))
    put("npz", "encrypted_flag.npz", zip64_end("x.npy", x_npy, flags=1))


def model(nodes, inputs, outputs, inits=(), opset=17, functions=(), sparse=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), sparse_initializer=list(sparse))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                          ([helper.make_opsetid("local", 1)] if functions else []), functions=list(functions))
    m.ir_version = 8
    return m.SerializeToString()


def onnx_seeds():
    f = TensorProto.FLOAT
    put("onnx_model", "sample.onnx", open(os.path.join(ROOT, "examples/cli/onnx/sample.onnx"), "rb").read())
    x = helper.make_tensor_value_info("x", f, ["batch", 4])
    y = helper.make_tensor_value_info("y", f, ["batch", 4])
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    put("onnx_model", "matmul.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"])], [x], [y], [w]))
    ext = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    ext.ClearField("raw_data")
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "data.bin"), ("offset", "0"), ("length", "64")):
        ext.external_data.add(key=k, value=v)
    put("onnx_model", "external.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"])], [x], [y], [ext]))
    ext.external_data[0].value = "sub/data.bin"
    put("onnx_model", "external_sub.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"])], [x], [y], [ext]))
    ext.external_data[0].value = "../outside.bin"
    put("onnx_model", "external_outside.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"])], [x], [y], [ext]))
    # If with subgraphs, a local function, a sequence and an optional input, strings, a sparse init.
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", f, None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", f, None)])
    put("onnx_model", "if.onnx", model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], [c, x], [y]))
    fn = helper.make_function("local", "Twice", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])], [helper.make_opsetid("", 17)])
    put("onnx_model", "function.onnx", model([helper.make_node("Twice", ["x"], ["y"], domain="local")], [x], [y], functions=[fn]))
    seq = helper.make_tensor_sequence_value_info("s", f, ["n", 4])
    put("onnx_model", "sequence.onnx", model([helper.make_node("SequenceAt", ["s", "i"], ["y"])],
                                             [seq, helper.make_tensor_value_info("i", TensorProto.INT64, [])], [y]))
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(f, [2])))
    put("onnx_model", "optional.onnx", model([helper.make_node("OptionalGetElement", ["o"], ["y"])], [opt], [y], opset=17))
    s_in = helper.make_tensor_value_info("s", TensorProto.STRING, [3])
    put("onnx_model", "strings.onnx", model([helper.make_node("Identity", ["s"], ["t"])], [s_in],
                                            [helper.make_tensor_value_info("t", TensorProto.STRING, [3])]))
    sp = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "v"),
                                   numpy_helper.from_array(np.array([1, 5], np.int64), "i"), [4, 4])
    sp.values.name = "sp"
    put("onnx_model", "sparse.onnx", model([helper.make_node("Add", ["x", "sp"], ["y"])], [x], [y], sparse=[sp]))
    put("onnx_model", "dropout.onnx", model([helper.make_node("RandomNormalLike", ["x"], ["y"])], [x], [y]))
    for name in ("test_abs", "test_sequence_insert_at_back", "test_optional_get_element_sequence", "test_if_seq"):
        p = os.path.join(TESTDATA, name, "model.onnx")
        if os.path.exists(p):
            put("onnx_model", name + ".onnx", open(p, "rb").read())


def pb_seeds():
    names = ["test_abs", "test_cast_FLOAT_to_FLOAT16", "test_cast_FLOAT_to_BFLOAT16", "test_strnormalizer_export_monday_casesensintive_lower",
             "test_identity_sequence", "test_optional_get_element", "test_optional_get_element_sequence", "test_optional_has_element_empty",
             "test_sequence_insert_at_back", "test_and2d", "test_argmax_default_axis_example", "test_cast_FLOAT_to_STRING",
             "test_cast_FLOAT_to_FLOAT8E4M3FN", "test_gather_0", "test_reshape_zero_dim"]
    n = 0
    for name in names:
        d = os.path.join(TESTDATA, name, "test_data_set_0")
        if not os.path.isdir(d):
            continue
        for fn in sorted(os.listdir(d)):
            put("tensor_pb", f"{name}_{fn}", open(os.path.join(d, fn), "rb").read())
            n += 1
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "x")
    put("tensor_pb", "raw_f32.pb", t.SerializeToString())
    t2 = helper.make_tensor("x", TensorProto.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6])
    put("tensor_pb", "typed_f32.pb", t2.SerializeToString())
    t3 = helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", b"c"])
    put("tensor_pb", "strings.pb", t3.SerializeToString())


def list_seeds():
    put("input_list", "selected_models.txt", open(os.path.join(ROOT, "examples/cli/scripts/selected_models.txt")).read())
    put("input_list", "mixed.txt", "# comment\n\na.py\nb.onnx\nsub/*.py\nother.txt\nsub/c.py::abcd1234,EF01\nmissing.py\n")
    put("input_list", "regex.txt", "sub/.*\\.py\n^a\\.(py|onnx)$\n(unclosed\n")
    put("input_list", "cycle.txt", "list.txt\nother.txt\n")
    put("input_list", "labels.txt", "# labels: author::turnkey,other task::Computer_Vision\n")
    put("input_list", "globs.txt", "*.py\n[ab].*\n?.onnx\n/nonexistent/*\n")


def cache_seeds():
    base = os.path.join(ROOT, "tests", "data", "cache_schema3")
    for build in sorted(os.listdir(base)):
        for fn in sorted(os.listdir(os.path.join(base, build))):
            if fn.endswith(".yaml"):
                put("cache_records", f"{build}_{fn}", open(os.path.join(base, build, fn)).read())
    put("cache_records", "sequence.yaml", "- optimize-ort\n- benchmark: {runtime: ort, iterations: 10}\n- convert-fp16\n")
    put("cache_records", "results.yaml", "schema_version: 5\nbuild_name: m_1234abcd\nresults:\n  - key: ort x86\n"
        "    status: successful\n    fields: {runtime: ort, device: x86, mean_latency_ms: 0.0013}\n"
        "    history: [{finished: '2026', status: failed, median_latency_ms: 1.5}]\n"
        "tools:\n  - {name: load-onnx, status: successful, duration_s: 0.1, options: {}, outputs: {onnx_path: a.onnx}, reused: true}\n"
        "signal: 9\nlean_cache: true\nsequence: [load-onnx, benchmark]\n")
    put("cache_records", "anchors.yaml", "a: &x {b: [1, 2.5, null, true, ~]}\nc: *x\nd: !!binary aGVsbG8=\ne: 1e400\nf: .nan\n")


def protocol_seeds():
    h = "0" * 64
    def line(**m):
        m.setdefault("v", 3)
        return json.dumps(m) + "\n"
    disc = (line(type="hello", python="3.11.2", torch="2.15.0", onnx="1.23.2", onnxscript=None) +
            line(type="model", id=0, parent_id=None, depth=0, name="model", class_name="M", class_path="m.M",
                 model_type="Pytorch (torch.nn.Module)", file="/s.py", line=3, parameters=10, parameter_bytes=40,
                 inputs=[{"name": "x", "shape": [1, 4], "dtype": "float32"}, {"name": "flag", "shape": None, "dtype": "bool"}],
                 signature_index=0, hash=h, module_id=0) +
            line(type="model", id=1, parent_id=0, depth=1, name="fc", class_name="Linear", class_path="torch.nn.Linear",
                 file="/s.py", line=5, parameters=4, parameter_bytes=16, inputs=[], signature_index=0, hash="1" * 64, module_id=1) +
            line(type="warning", message="could not describe a call", traceback="Traceback...") +
            line(type="script_end", status="ok", exit_code=0, error=None, traceback=None) +
            line(type="counts", counts={"0": 2, "1": 2}, first_call_s={"0": 0.01}) +
            line(type="ready"))
    put("protocol", "discovery.jsonl", disc)
    ok = dict(ok=True)
    replies = (line(type="exported", id=0, ok=True, onnx_path="/c/m.onnx", inputs=["/c/io/input_0.pb"], outputs=["/c/io/output_0.pb"],
                    input_names=["x"], output_names=["y"], opset=17, exporter="torchscript", exporter_version="torch 2.15.0",
                    export_s=0.5, log="", exporter_fixes=["aten_zero"],
                    intermediates=[{"module": "head", "tensor": "/t", "path": "/c/io/intermediate_0.pb", "shape": [1], "dtype": "float32"}]) +
               line(type="bench_ready", id=0, threads=2, compiled={"compile_s": 3.5, "graph_breaks": 0, "graph_break_reasons": ["x (2)"]},
                    cuda={"tf32_matmul": False, "device_environment": {"torch_gpu_name": "H100", "gpu_memory_bytes": 80}}, **ok) +
               line(type="bench_samples", samples_ns=[1000, 1200, 900], device_memory={"device_memory_allocated_bytes": 5}, **ok) +
               line(type="bench_profiled", ops=[{"op_type": "aten::addmm", "self_ms": 0.5, "count": 2}], run_ms=3.0, **ok) +
               line(type="bench_outputs", outputs=["/c/io/output_0.pb"], **ok) +
               line(type="reference_saved", id=0, inputs=["/c/io/input_0.pb"], outputs=["/c/io/output_0.pb"], **ok) +
               line(type="traced", id=0, path="/c/m.pt", inputs=["/c/io/input_0.pb"], **ok) +
               line(type="stage_done", log="fired", **ok))
    put("protocol", "session.jsonl", disc + replies)
    fail = line(type="exported", id=0, ok=False, error="RuntimeError: boom", error_type="RuntimeError",
                error_status="out_of_memory", traceback="Traceback")
    put("protocol", "failures.jsonl", disc + fail + line(type="error", error="unknown command") + replies)
    put("protocol", "exception.jsonl", line(type="hello", python="3.11", torch=None, onnx=None) +
        line(type="script_end", status="exception", error="ZeroDivisionError: division by zero", error_type="ZeroDivisionError",
             traceback="Traceback", interrupted=False) + line(type="counts", counts={}) + line(type="ready"))
    put("protocol", "forged.jsonl", line(type="hello", pid=1) + line(type="model", id="0", hash="x") +
        '{"v": 3, "type": "model", "inputs": [{"shape": ["x"]}]}\n' + "not json\n" + line(type="ready"))


if __name__ == "__main__":
    npz_seeds()
    onnx_seeds()
    pb_seeds()
    list_seeds()
    cache_seeds()
    protocol_seeds()
    for t in sorted(os.listdir(OUT)):
        files = os.listdir(os.path.join(OUT, t))
        print(t, len(files), sum(os.path.getsize(os.path.join(OUT, t, f)) for f in files), "bytes")
