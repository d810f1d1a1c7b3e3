"""How a PTX string becomes a Numba intrinsic: the one place that builds InlineAsm.

Every primitive in gemm/ptx is a `numba.cuda.extending.intrinsic` whose codegen
calls `emit()`. Inline asm (rather than a linked PTX module) keeps WGMMA's
accumulators in registers: docs/design.md, "Why inline PTX rather than a separately linked PTX module".
"""
from llvmlite import ir

I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
VOID = ir.VoidType()


def emit(builder, ptx, constraints, args=(), result=VOID):
    """Place `ptx` in the kernel. `constraints` is LLVM's list ("=r,r,l,~{memory}"):
    outputs first, then inputs; `result` the LLVM type of the outputs (a struct
    for several). The asm is volatile (side effect) and clobbers memory, so the
    compiler neither drops nor reorders it across other memory operations."""
    if "~{memory}" not in constraints:
        constraints = f"{constraints},~{{memory}}" if constraints else "~{memory}"
    fnty = ir.FunctionType(result, [a.type for a in args])
    asm = ir.InlineAsm(fnty, ptx, constraints, side_effect=True)
    return builder.call(asm, list(args))


def literal_int(t, what):
    """The value of a compile-time integer argument, or a clear typing error."""
    from numba.cuda import types
    from numba.cuda.core.errors import RequireLiteralValue
    if not isinstance(t, types.IntegerLiteral):
        raise RequireLiteralValue(f"{what} must be a compile-time integer constant, got {t}")
    return t.literal_value


def asm_intrinsic(name, ptx, constraints, argtypes=(), restype=None, doc=None):
    """A Numba intrinsic that places one fixed PTX string: it takes `argtypes`
    (numba types; arguments are cast to them) and returns a value of `restype`
    (uint32 or uint64, from the asm's single output) or nothing."""
    from numba.cuda import types
    from numba.cuda.extending import intrinsic
    from numba.cuda.typing import signature

    result = {None: VOID, types.uint32: I32, types.uint64: I64}[restype]
    if len(argtypes) > 6:
        raise ValueError(f"{name}: at most 6 arguments")
    sig = signature(restype or types.void, *argtypes)

    def codegen(context, builder, sig_, args):
        out = emit(builder, ptx, constraints, args, result)
        return out if restype is not None else None

    def resolve():
        return sig, codegen

    # intrinsic() reads the typer's parameters as the function's own: one per argument
    typer = {0: lambda typingctx: resolve(),
             1: lambda typingctx, a: resolve(),
             2: lambda typingctx, a, b: resolve(),
             3: lambda typingctx, a, b, c: resolve(),
             4: lambda typingctx, a, b, c, d: resolve(),
             5: lambda typingctx, a, b, c, d, e: resolve(),
             6: lambda typingctx, a, b, c, d, e, f: resolve()}[len(argtypes)]
    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(typer)


def asm_count_intrinsic(name, template, doc=None):
    """A Numba intrinsic `f(n)` placing `template.format(n=n)`, where n must be a
    compile-time integer (the count operand of a wait_group)."""
    from numba.cuda import types
    from numba.cuda.extending import intrinsic
    from numba.cuda.typing import signature

    def typer(typingctx, n):
        ptx = template.format(n=literal_int(n, "the count"))

        def codegen(context, builder, sig, args):
            emit(builder, ptx, "")
        return signature(types.void, n), codegen
    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(typer)
