"""Where a tile of A or B lives in shared memory, seen by TMA and by WGMMA alike.

A WGMMA operand in shared memory is described by a 64-bit matrix descriptor
(start address, leading and stride byte offsets, swizzle mode); TMA writes the
tile there in boxes whose inner extent is one swizzle row. Both views must
agree, so both are derived here, from one `OperandLayout`. Pure Python.

Canonical layouts (CUTLASS cute/atom/mma_traits_sm90_gmma.hpp), for 16-bit
elements, W = swizzle width in bytes (16 when there is no swizzle):
  K-major : rows are M (or N); each box holds W bytes of K per row.
            8-row groups are SBO = 8*W apart; with no swizzle the two 8-element
            K halves of a k16 step are LBO = one box apart.
  MN-major: rows are K; each box holds W bytes of M (or N) per row.
            Swizzled: MN atoms (W/2 elements) are LBO = one box apart, 8-row K
            groups SBO = 8*W apart. No swizzle: the two offsets trade places.
"""
from __future__ import annotations

from dataclasses import dataclass

from .limits import TMA_MAX_BOX, WGMMA_M, staging_swizzle

ELEMENT_BYTES = 2
SWIZZLES = (0, 32, 64, 128)
# cuTensorMapEncodeTiled's CUtensorMapSwizzle and the descriptor's 2-bit mode
TENSORMAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
DESCRIPTOR_SWIZZLE = {0: 0, 128: 1, 64: 2, 32: 3}


@dataclass(frozen=True)
class OperandLayout:
    major: str     # "k": K contiguous in global memory; "mn": M (for A) or N (for B) contiguous
    mn: int        # tile rows in M (A) or N (B)
    k: int         # tile extent in K
    swizzle: int   # bytes: 0, 32, 64 or 128
    parts: int = 1  # CTAs of a cluster that each load 1/parts of the tile and multicast it

    def __post_init__(self):
        if self.major not in ("k", "mn"):
            raise ValueError(f"major must be 'k' or 'mn', got {self.major!r}")
        if self.swizzle not in SWIZZLES:
            raise ValueError(f"swizzle must be one of {SWIZZLES} bytes, got {self.swizzle}")
        along = self.k if self.major == "k" else self.mn
        if along % self.row_elems:
            raise ValueError(f"a {self.major}-major tile extent of {along} elements is not a "
                             f"multiple of the {self.row_elems}-element swizzle row")
        if self.k % 16 or self.mn % 8:
            raise ValueError(f"tile {self.mn}x{self.k}: K must be a multiple of 16 and MN of 8")
        if self.parts > 1:
            split = self.mn // 8 if self.major == "k" else self.boxes
            if split % self.parts:
                raise ValueError(f"a {self.major}-major {self.mn}x{self.k} tile cannot be loaded in "
                                 f"{self.parts} equal parts (8-row groups or boxes: {split})")

    @property
    def width(self) -> int:
        """Bytes of one shared-memory row of a box."""
        return self.swizzle or 16

    @property
    def row_elems(self) -> int:
        return self.width // ELEMENT_BYTES

    @property
    def box(self) -> tuple[int, int]:
        """TMA box (inner, outer) in elements."""
        return (self.row_elems, self.mn if self.major == "k" else self.k)

    @property
    def boxes(self) -> int:
        return (self.k if self.major == "k" else self.mn) // self.row_elems

    @property
    def row_slabs(self) -> int:
        """TMA loads per box column of a K-major part: a box is at most TMA_MAX_BOX rows, so a
        part with more rows (a 320-row B tile loaded whole) is loaded in equal slabs of 8-row
        groups. An MN-major tile's boxes are block_k rows and need no slabs."""
        if self.major != "k":
            return 1
        rows = self.mn // self.parts
        slabs = -(-rows // TMA_MAX_BOX)
        while rows % (8 * slabs):
            slabs += 1
        return slabs

    @property
    def tma_box(self) -> tuple[int, int]:
        """The box one TMA load copies: a whole box column of the tile, or for a K-major tile,
        one slab of its part's rows (a multicast operand's part is 1/parts of them; an MN-major
        tile splits by boxes)."""
        inner, outer = self.box
        return (inner, outer // (self.parts * self.row_slabs)) if self.major == "k" else (inner, outer)

    def part_boxes(self, part: int) -> list[tuple[int, int, int]]:
        """(byte offset in the tile, inner, outer element offsets) of each TMA load that CTA
        `part` issues for its share of the tile."""
        if self.major == "k":
            rows = self.mn // self.parts
            slab = rows // self.row_slabs
            return [(i * self.box_bytes + (part * rows + j * slab) * self.width, i * self.row_elems,
                     part * rows + j * slab)
                    for i in range(self.boxes) for j in range(self.row_slabs)]
        per = self.boxes // self.parts
        return [(i * self.box_bytes, i * self.row_elems, 0) for i in range(part * per, (part + 1) * per)]

    @property
    def box_bytes(self) -> int:
        return self.width * self.box[1]

    @property
    def tile_bytes(self) -> int:
        return self.mn * self.k * ELEMENT_BYTES

    @property
    def alignment(self) -> int:
        """Shared-memory alignment the tile needs (the swizzle pattern repeats every 8 rows)."""
        return max(128, 8 * self.width)

    def box_origin(self, i: int) -> tuple[int, int]:
        """Element offset (inner, outer) of box i from the tile's corner, in the
        tensor map's own coordinates."""
        return (i * self.row_elems, 0)

    @property
    def leading_byte_offset(self) -> int:
        if self.major == "k":
            return self.box_bytes if self.swizzle == 0 else 16  # unused when swizzled
        return 8 * self.width if self.swizzle == 0 else self.box_bytes

    @property
    def stride_byte_offset(self) -> int:
        if self.major == "k":
            return 8 * self.width
        return self.box_bytes if self.swizzle == 0 else 8 * self.width

    @property
    def descriptor_bits(self) -> int:
        """The descriptor without its start address (bits 16-29 LBO, 32-45 SBO, 62-63 swizzle)."""
        return ((self.leading_byte_offset >> 4) << 16) | ((self.stride_byte_offset >> 4) << 32) \
            | (DESCRIPTOR_SWIZZLE[self.swizzle] << 62)

    def offset(self, k_step: int, block: int = 0, block_rows: int = WGMMA_M) -> int:
        """Byte offset, from the tile start, of the operand of one WGMMA: the k16 step
        `k_step` and the block `block` of `block_rows` rows (A: 64-row blocks; B: column
        blocks of a tile wider than one WGMMA)."""
        if self.major == "k":
            kbytes = k_step * 16 * ELEMENT_BYTES
            if self.swizzle:
                k_off = (kbytes // self.width) * self.box_bytes + kbytes % self.width
            else:
                k_off = (kbytes // self.width) * self.box_bytes
            return k_off + block * block_rows * self.width
        if block and block_rows % self.row_elems:
            raise ValueError(f"an MN-major block of {block_rows} rows does not start on a "
                             f"{self.row_elems}-element swizzle row")
        return k_step * 16 * self.width + block * (block_rows // self.row_elems) * self.box_bytes

    @property
    def transpose_bit(self) -> int:
        """WGMMA's imm-trans operand: 0 for K-major, 1 for MN-major."""
        return 0 if self.major == "k" else 1


def default_swizzle(major: str, k: int, mn: int = 64, parts: int = 1, block: int | None = None) -> int:
    """The widest swizzle a tile allows: K-major rows are 2*k bytes wide; an MN-major
    tile's mn extent must be a whole number of swizzle rows, and, when `parts` CTAs share
    the tile by multicast, of `parts` equal runs of them; so must each WGMMA's `block` of
    it (a tile wider than one WGMMA)."""
    if major == "k":
        return min(128, k * ELEMENT_BYTES)
    block = mn if block is None else block
    for width in (128, 64, 32):
        if mn % (parts * width // ELEMENT_BYTES) == 0 and block % (width // ELEMENT_BYTES) == 0:
            return width
    return 0


# Weights packed for plain bulk copies (gemm.pack_weights): a K-major operand [rows, K] stored
# as boxes of PACKED_BOX_ROWS rows by one 128-byte swizzle row of K, each box the very image a
# TMA load with the 128-byte swizzle writes into shared memory (16-byte chunk c of row r at
# chunk c ^ (r % 8)), a row tile's boxes in K order, the row tiles one after another. A K tile
# of a 64-row tile is then one contiguous run, copied by one bulk copy: one request where the
# tensor map's box is one per row. K is padded with zeros to PACKED_K_STEP (so that a K tile of
# 64 or 128 never runs past its row tile) and the rows to whole boxes, with PACKED_SLACK_ROWS
# zero rows beyond them, so that a tile of up to PACKED_MAX_TILE_ROWS rows starting at the last
# box stays inside the buffer (the rows past the operand's end are never stored).
PACKED_SWIZZLE = 128
PACKED_BOX_ROWS = 64
PACKED_BOX_ELEMS = PACKED_SWIZZLE // ELEMENT_BYTES
PACKED_BOX_BYTES = PACKED_BOX_ROWS * PACKED_SWIZZLE
PACKED_K_STEP = 128
PACKED_MAX_TILE_ROWS = 256
PACKED_SLACK_ROWS = PACKED_MAX_TILE_ROWS - PACKED_BOX_ROWS


def packed_k(k: int) -> int:
    """K of a packed operand: padded with zeros to a multiple of PACKED_K_STEP."""
    return -(-k // PACKED_K_STEP) * PACKED_K_STEP


def packed_rows(rows: int) -> int:
    """Rows a packed operand of `rows` rows holds: whole boxes, then the slack."""
    return -(-rows // PACKED_BOX_ROWS) * PACKED_BOX_ROWS + PACKED_SLACK_ROWS


def packed_row_tile_bytes(k: int) -> int:
    """Bytes from one PACKED_BOX_ROWS-row tile of a packed operand of depth K to the next."""
    return packed_k(k) // PACKED_BOX_ELEMS * PACKED_BOX_BYTES


def packed_gaps(layout: OperandLayout) -> list[str]:
    """Why a tile of `layout` cannot be loaded from a packed operand (empty if it can)."""
    gaps = []
    if layout.major != "k" or layout.swizzle != PACKED_SWIZZLE:
        gaps.append(f"a packed operand is K-major with the {PACKED_SWIZZLE}-byte swizzle, the tile is "
                    f"{layout.major}-major with {layout.swizzle}")
    if PACKED_K_STEP % layout.k:
        gaps.append(f"block_k={layout.k} does not divide the packed K step {PACKED_K_STEP} (64 or 128 do)")
    if (layout.mn // layout.parts) % PACKED_BOX_ROWS or layout.mn > PACKED_MAX_TILE_ROWS:
        gaps.append(f"the packed operand's tile side ({layout.mn} rows, {layout.parts} part(s) of a cluster) "
                    f"must be whole parts of {PACKED_BOX_ROWS}-row boxes, at most {PACKED_MAX_TILE_ROWS} rows")
    return gaps


@dataclass(frozen=True)
class StagingLayout:
    """A C tile staged in shared memory for a TMA store: `rows` x `cols` 16-bit elements in
    boxes of one swizzle row (swizzle/2 columns) by `rows`, box after box. The widest
    swizzle that divides the tile's columns keeps stmatrix free of bank conflicts."""
    rows: int
    cols: int

    @property
    def swizzle(self) -> int:
        return staging_swizzle(self.cols)

    @property
    def box(self) -> tuple[int, int]:
        return (self.swizzle // ELEMENT_BYTES, self.rows)

    @property
    def boxes(self) -> int:
        return self.cols // self.box[0]

    @property
    def box_bytes(self) -> int:
        return self.rows * self.swizzle

    @property
    def tile_bytes(self) -> int:
        return self.rows * self.cols * ELEMENT_BYTES
