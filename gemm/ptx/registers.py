"""setmaxnreg: a warpgroup gives registers back to the SM's pool, or takes them.

The kernel starts every thread with the same count (the cap ptxas is given through the
launch bounds); a producer warpgroup that only issues TMA shrinks, and the consumer
warpgroups grow into what it freed, so a 64x256 fp32 accumulator tile fits one
warpgroup. ptxas honours it only when the kernel's register count at entry is fixed
(launch bounds with a minimum of CTAs per SM), and warns C7508 otherwise.
"""
from ._asm import asm_count_intrinsic

setmaxnreg_inc = asm_count_intrinsic(
    "setmaxnreg_inc", "setmaxnreg.inc.sync.aligned.u32 {n};",
    doc="setmaxnreg_inc(n): every thread of this warpgroup grows to n registers (waits for them).")

setmaxnreg_dec = asm_count_intrinsic(
    "setmaxnreg_dec", "setmaxnreg.dec.sync.aligned.u32 {n};",
    doc="setmaxnreg_dec(n): every thread of this warpgroup shrinks to n registers.")
