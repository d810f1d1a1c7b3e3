"""Run a script or module with the L2's persisting set-aside at MB megabytes (or the device's most,
if MB is 'max'), in the process's primary context: python persist148.py MB script.py|-m module args..."""
import runpy, sys
import torch
from cuda.bindings import driver as cu

torch.zeros(1, device="cuda")                   # the primary context, current on this thread
err, dev = cu.cuCtxGetDevice()
err, most = cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, dev)
want = most if sys.argv[1] == "max" else int(float(sys.argv[1]) * 2**20)
print("set-aside", cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, want),
      "now", cu.cuCtxGetLimit(cu.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE), "most", most, flush=True)
if sys.argv[2] == "-m":
    sys.argv = [sys.argv[3]] + sys.argv[4:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
