"""Clocks, for probes that measure the SM clock a kernel actually runs at."""
from numba.cuda.types import uint32, uint64

from ._asm import asm_intrinsic

clock64 = asm_intrinsic("clock64", "mov.u64 $0, %clock64;", "=l", restype=uint64,
                        doc="This SM's cycle counter.")
globaltimer = asm_intrinsic("globaltimer", "mov.u64 $0, %globaltimer;", "=l", restype=uint64,
                            doc="The GPU's nanosecond timer (shared by all SMs).")
smid = asm_intrinsic("smid", "mov.u32 $0, %smid;", "=r", restype=uint32,
                     doc="The index of the SM this thread runs on.")
st_global_u64 = asm_intrinsic("st_global_u64", "st.global.u64 [$0], $1;", "l,l", (uint64, uint64),
                              doc="An 8-byte store to a global address.")
