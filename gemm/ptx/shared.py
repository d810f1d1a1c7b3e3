"""Shared-memory addresses as PTX wants them: 32-bit offsets in the shared window."""
from numba.cuda import types
from numba.cuda.extending import intrinsic
from numba.cuda.typing import signature

from ._asm import I32, I64, asm_intrinsic, emit


@intrinsic
def shared_base(typingctx, arr):
    """The 32-bit shared-window address of a shared array's first byte."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        generic = builder.ptrtoint(data, I64)
        shared = emit(builder, "cvta.to.shared.u64 $0, $1;", "=l,l", (generic,), I64)
        return builder.trunc(shared, I32)
    return signature(types.uint32, arr), codegen


ld_shared_u32 = asm_intrinsic("ld_shared_u32", "ld.shared.b32 $0, [$1];", "=r,r", (types.uint32,),
                              restype=types.uint32, doc="A 4-byte load from the shared window (probes, tests).")
st_shared_u32 = asm_intrinsic("st_shared_u32", "st.shared.b32 [$0], $1;", "r,r", (types.uint32, types.uint32),
                              doc="A 4-byte store to the shared window (probes, tests).")
