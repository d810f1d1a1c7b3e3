"""Programmatic dependent launch: a kernel scheduled before the one ahead of it on the stream ends.

A launch with the programmatic-stream-serialization attribute (gemm.launch) may be scheduled
once every CTA of the kernel ahead of it on the stream has issued `launch_dependents` (or
exited), instead of after that kernel has completed and its memory has been flushed. Its CTAs
take SMs as the earlier kernel's CTAs leave them, set up, and wait in `griddepcontrol.wait`
until the earlier kernel has completed and its writes are visible: no load of A or B and no
write of C or the workspace comes before it. The GEMM kernels issue `launch_dependents` when a
CTA's work is done: issued as soon as the CTAs have set up, the next kernel's CTAs would take
the SMs a grid smaller than the GPU leaves idle and wait there, and that kernel, placed on
whatever SMs were free, would run slower. Launched without the attribute, both instructions do
nothing.
"""
from ._asm import asm_intrinsic

grid_dependency_wait = asm_intrinsic(
    "grid_dependency_wait", "griddepcontrol.wait;", "",
    doc="Wait until the kernels this launch depends on (the one ahead on the stream, under "
        "programmatic stream serialization) have completed and their memory operations are "
        "visible to this grid; at once when there are none.")

launch_dependents = asm_intrinsic(
    "launch_dependents", "griddepcontrol.launch_dependents;", "",
    doc="Let the next kernel on the stream, if launched as a programmatic dependent, be scheduled "
        "once every CTA of this grid has issued this or exited (once per CTA suffices).")
