#!/usr/bin/env python3
"""PyTorch and minijit sharing CUDA tensors through DLPack, without copies.

Loads the shim library (bin/libminijit_dlpack_shim.so of a minijit build) with
ctypes, runs minijit's GeLU graph (samples/gelu.mj) on torch tensors taken from
torch.utils.dlpack.to_dlpack capsules, hands the outputs back to torch with
torch.utils.dlpack.from_dlpack, and compares with torch's tanh GeLU. Checks
that no copy is made either way, that memory goes back to its owner when the
last user is gone, and that tensors minijit cannot use are refused with a clear
message and left to their owner.

    python3 tests/gpu/dlpack_torch.py build-gpu/bin/libminijit_dlpack_shim.so

Prints every check; exits 1 when any fails, 2 when it cannot start.
"""
import argparse
import ctypes
import gc
import sys

GELU = """graph gelu(%x: {dtype}[{n}]) {{
  %x2 = mul %x, %x
  %x3 = mul %x2, %x
  %a = mul %x3, 0.044715
  %b = add %x, %a
  %c = mul %b, 0.7978846
  %t = tanh %c
  %u = add %t, 1
  %h = mul %x, 0.5
  %y = mul %h, %u
  return %y
}}
"""

# PyCapsule_New and PyCapsule_SetName keep the name pointer: these live as
# long as the module.
DLTENSOR = ctypes.c_char_p(b"dltensor")
USED_DLTENSOR = ctypes.c_char_p(b"used_dltensor")

api = ctypes.pythonapi
capsule_get_pointer = api.PyCapsule_GetPointer
capsule_get_pointer.restype = ctypes.c_void_p
capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_set_name = api.PyCapsule_SetName
capsule_set_name.restype = ctypes.c_int
capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_is_valid = api.PyCapsule_IsValid
capsule_is_valid.restype = ctypes.c_int
capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_new = api.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
# The same functions on a raw PyObject*, for the capsule destructor (which
# must not make a Python object of a capsule being destroyed).
raw_is_valid = api["PyCapsule_IsValid"]
raw_is_valid.restype = ctypes.c_int
raw_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
raw_get_pointer = api["PyCapsule_GetPointer"]
raw_get_pointer.restype = ctypes.c_void_p
raw_get_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

shim = None


class MinijitError(Exception):
    pass


def load_shim(path):
    lib = ctypes.CDLL(path)
    vp, i32 = ctypes.c_void_p, ctypes.c_int
    sigs = {
        "mjs_last_error": (ctypes.c_char_p, []),
        "mjs_compile": (vp, [ctypes.c_char_p, i32]),
        "mjs_free_executable": (None, [vp]),
        "mjs_from_dlpack": (vp, [vp, i32]),
        "mjs_to_dlpack": (vp, [vp]),
        "mjs_delete_dlpack": (None, [vp]),
        "mjs_free_tensor": (None, [vp]),
        "mjs_tensor_address": (ctypes.c_ulonglong, [vp]),
        "mjs_bytes_in_use": (ctypes.c_longlong, [i32]),
        "mjs_run": (i32, [vp, ctypes.POINTER(vp), i32, ctypes.POINTER(vp), i32, i32]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def error():
    return shim.mjs_last_error().decode()


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def capsule_destructor(capsule):
    # A capsule nobody consumed still holds its tensor: run the deleter.
    if raw_is_valid(capsule, DLTENSOR):
        shim.mjs_delete_dlpack(raw_get_pointer(capsule, DLTENSOR))


class Tensor:
    """A minijit tensor handle; frees it when collected."""

    def __init__(self, handle):
        self.handle = handle

    def address(self):
        return shim.mjs_tensor_address(self.handle)

    def __del__(self):
        if self.handle:
            shim.mjs_free_tensor(self.handle)
            self.handle = None


def from_torch(t, device):
    """Takes a torch tensor into minijit without a copy (consumes a capsule)."""
    import torch.utils.dlpack

    torch.cuda.synchronize()  # minijit does not wait for torch's streams
    capsule = torch.utils.dlpack.to_dlpack(t)
    if not capsule_is_valid(capsule, DLTENSOR):
        raise MinijitError("to_dlpack did not give a 'dltensor' capsule")
    handle = shim.mjs_from_dlpack(capsule_get_pointer(capsule, DLTENSOR), device)
    if not handle:
        # Refused: the capsule was not consumed and still owns the tensor.
        assert capsule_is_valid(capsule, DLTENSOR)
        raise MinijitError(error())
    capsule_set_name(capsule, USED_DLTENSOR)
    return Tensor(handle)


def to_torch(t):
    """Hands a minijit tensor to torch without a copy."""
    import torch.utils.dlpack

    managed = shim.mjs_to_dlpack(t.handle)
    if not managed:
        raise MinijitError(error())
    capsule = capsule_new(managed, DLTENSOR, ctypes.cast(capsule_destructor, ctypes.c_void_p))
    return torch.utils.dlpack.from_dlpack(capsule)


class Executable:
    def __init__(self, text, device):
        self.handle = shim.mjs_compile(text.encode(), device)
        if not self.handle:
            raise MinijitError(error())

    def run(self, inputs, outputs=None):
        """Runs and waits; writes into `outputs` when given, else returns new tensors."""
        ins = (ctypes.c_void_p * len(inputs))(*[t.handle for t in inputs])
        allocate = outputs is None
        n = 1 if allocate else len(outputs)
        outs = (ctypes.c_void_p * n)(*([None] * n if allocate else [t.handle for t in outputs]))
        if shim.mjs_run(self.handle, ins, len(inputs), outs, n, int(allocate)) != 0:
            raise MinijitError(error())
        return [Tensor(h) for h in outs] if allocate else outputs

    def __del__(self):
        if getattr(self, "handle", None):
            shim.mjs_free_executable(self.handle)


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, what, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {what}")
        else:
            self.failed += 1
            print(f"FAIL  {what}" + (f": {detail}" if detail else ""))

    def refused(self, what, fn, expected):
        try:
            fn()
        except MinijitError as e:
            self.check(what, expected in str(e), f"message {str(e)!r} lacks {expected!r}")
            if expected in str(e):
                print(f"      minijit: {e}")
            return
        self.check(what, False, "minijit took it")


def gelu_case(c, torch, device, dtype, n, tol):
    dev = f"cuda:{device}"
    name = {torch.float32: "f32", torch.float16: "f16"}[dtype]
    label = f"gelu {name}[{n}]"
    exe = Executable(GELU.format(dtype=name, n=n), device)
    x = torch.randn(n, device=dev, dtype=dtype)
    ref = torch.nn.functional.gelu(x.float(), approximate="tanh")

    # torch -> minijit -> torch, new output.
    mx = from_torch(x, device)
    c.check(f"{label}: the input is torch's memory", mx.address() == x.data_ptr())
    (my,) = exe.run([mx])
    y = to_torch(my)
    c.check(f"{label}: the output torch sees is minijit's memory", y.data_ptr() == my.address())
    c.check(f"{label}: output dtype, shape and device",
            y.dtype == dtype and tuple(y.shape) == (n,) and y.device == x.device,
            f"{y.dtype} {tuple(y.shape)} {y.device}")
    err = (y.float() - ref).abs().max().item()
    c.check(f"{label}: matches torch's tanh GeLU (max abs error {err:.3g})",
            torch.allclose(y.float(), ref, rtol=tol, atol=tol))

    # Written in place into a torch tensor.
    out = torch.full_like(x, float("nan"))
    exe.run([mx], [from_torch(out, device)])
    torch.cuda.synchronize()
    c.check(f"{label}: written in place into a torch tensor",
            torch.allclose(out.float(), ref, rtol=tol, atol=tol))

    # minijit's output given back to minijit through torch: still no copy.
    again = from_torch(y, device)
    c.check(f"{label}: minijit -> torch -> minijit keeps the address", again.address() == my.address())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shim", help="path to libminijit_dlpack_shim.so")
    ap.add_argument("--device", type=int, default=0, help="CUDA device ordinal (default 0)")
    args = ap.parse_args()
    global shim
    try:
        import torch
        import torch.utils.dlpack

        shim = load_shim(args.shim)
    except (ImportError, OSError, AttributeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device", file=sys.stderr)
        return 2
    device = args.device
    torch.cuda.set_device(device)
    dev = f"cuda:{device}"
    torch.manual_seed(0)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(device)}; shim {args.shim}")
    c = Checks()

    for dtype, n, tol in [(torch.float32, 1 << 20, 1e-5), (torch.float32, 1025, 1e-5),
                          (torch.float16, 1025, 1e-2), (torch.float16, 1 << 20, 1e-2)]:
        try:
            gelu_case(c, torch, device, dtype, n, tol)
        except Exception as e:  # report and go on to the next case
            c.check(f"gelu {dtype} [{n}]", False, f"{type(e).__name__}: {e}")
        gc.collect()

    # Memory goes back to its owner when the last user lets go.
    try:
        gc.collect()
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated(device)
        x = torch.randn(1 << 20, device=dev)
        mx = from_torch(x, device)
        del x
        gc.collect()
        c.check("an imported tensor stays allocated in torch while minijit holds it",
                torch.cuda.memory_allocated(device) == base + 4 * (1 << 20),
                f"{torch.cuda.memory_allocated(device) - base} bytes above the start")
        del mx
        gc.collect()
        c.check("torch gets it back when minijit lets go (the deleter ran)",
                torch.cuda.memory_allocated(device) == base,
                f"{torch.cuda.memory_allocated(device) - base} bytes above the start")

        exe = Executable(GELU.format(dtype="f32", n=4096), device)
        held = shim.mjs_bytes_in_use(device)
        (my,) = exe.run([from_torch(torch.randn(4096, device=dev), device)])
        y = to_torch(my)
        del my
        gc.collect()
        c.check("an exported tensor stays allocated in minijit while torch holds it",
                shim.mjs_bytes_in_use(device) > held)
        del y
        gc.collect()
        c.check("minijit gets it back when torch lets go (the deleter ran)",
                shim.mjs_bytes_in_use(device) == held,
                f"{shim.mjs_bytes_in_use(device) - held} bytes above the start")
    except Exception as e:
        c.check("memory returns to its owner", False, f"{type(e).__name__}: {e}")

    # Tensors minijit cannot use: refused, and left with torch.
    base_x = torch.randn(64, 32, device=dev)
    c.refused("a transposed (non-contiguous) tensor is refused",
              lambda: from_torch(base_x.t(), device), "are not row-major")
    c.refused("a CPU tensor is refused", lambda: from_torch(torch.randn(16), device),
              "is in CPU memory")
    c.refused("a slice starting 4 bytes in is refused",
              lambda: from_torch(torch.randn(1025, device=dev)[1:], device), "not 16-byte aligned")
    c.refused("a float64 tensor is refused",
              lambda: from_torch(torch.randn(16, device=dev, dtype=torch.float64), device),
              "dtype float64 is not supported")
    exe = Executable(GELU.format(dtype="f32", n=1025), device)
    half = torch.randn(1025, device=dev, dtype=torch.float16)
    c.refused("an f16 tensor given to an f32 graph is refused",
              lambda: exe.run([from_torch(half, device)]), "expected f32[1025], got f16[1025]")
    if torch.cuda.device_count() > 1:
        other = torch.randn(16, device=f"cuda:{(device + 1) % torch.cuda.device_count()}")
        c.refused("a tensor on another GPU is refused", lambda: from_torch(other, device),
                  "the minijit device is")
    gc.collect()
    torch.cuda.synchronize()

    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
