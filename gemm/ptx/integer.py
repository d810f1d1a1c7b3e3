"""32-bit integer division. Numba widens integers to 64 bits, and a 64-bit division
becomes a subroutine call in SASS; a call anywhere in a kernel makes ptxas serialize
every wgmma.mma_async (warning C7509). These keep the few divisions a kernel needs
(tile coordinates from the block index) in 32 bits, inline."""
from numba.cuda.types import uint32

from ._asm import asm_intrinsic

div_u32 = asm_intrinsic("div_u32", "div.u32 $0, $1, $2;", "=r,r,r", (uint32, uint32), restype=uint32,
                        doc="a // b for unsigned 32-bit a and b (b > 0).")
rem_u32 = asm_intrinsic("rem_u32", "rem.u32 $0, $1, $2;", "=r,r,r", (uint32, uint32), restype=uint32,
                        doc="a % b for unsigned 32-bit a and b (b > 0).")
