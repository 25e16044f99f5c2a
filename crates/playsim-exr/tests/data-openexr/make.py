#!/usr/bin/env python3
"""Writes the EXR files that the openexr backend's tests decode, with OpenEXR itself.

Run with a Python that has PyPI's OpenEXR (3.x) and numpy:

    python make.py            # writes *.exr and expected.tsv next to this script

expected.tsv holds, for each file (and layer), the canonical md5: the file is read
back with OpenEXR, the selected channels (R, G, B, A, those that exist; else every
channel in the file's order) are interleaved row by row over the data window, half
and float samples as f32 little-endian, uint as u32 little-endian. Reading back,
rather than hashing what was written, makes the md5 right for lossy compressions too.
The content is seeded, so a rerun writes the same pixels.
"""

import hashlib
import os
import sys

import numpy as np
import OpenEXR

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20240611)

# A data window smaller than the display window and away from the origin, with a
# width and height that are not multiples of any block or tile size.
DATA_WINDOW = ((5, 3), (37, 42))  # 33 x 40
DISPLAY_WINDOW = ((0, 0), (47, 47))
# One with negative coordinates.
NEGATIVE_WINDOW = ((-7, -5), (20, 30))  # 28 x 36

COMPRESSIONS = {
    "none": OpenEXR.NO_COMPRESSION,
    "rle": OpenEXR.RLE_COMPRESSION,
    "zips": OpenEXR.ZIPS_COMPRESSION,
    "zip": OpenEXR.ZIP_COMPRESSION,
    "piz": OpenEXR.PIZ_COMPRESSION,
    "pxr24": OpenEXR.PXR24_COMPRESSION,
    "b44": OpenEXR.B44_COMPRESSION,
    "b44a": OpenEXR.B44A_COMPRESSION,
    "dwaa": OpenEXR.DWAA_COMPRESSION,
    "dwab": OpenEXR.DWAB_COMPRESSION,
}


def box(window):
    (x0, y0), (x1, y1) = window
    return (np.array([x0, y0], dtype=np.int32), np.array([x1, y1], dtype=np.int32))


def size(window):
    (x0, y0), (x1, y1) = window
    return x1 - x0 + 1, y1 - y0 + 1


def image(window, dtype, phase, specials=True):
    """A smooth ramp with film-grain-like noise; a few exact specials in half/float."""
    w, h = size(window)
    if dtype == np.uint32:
        # Object ids: a few values in patches, and the extremes.
        y, x = np.mgrid[0:h, 0:w]
        ids = ((x // 7 + 3 * (y // 5) + phase) * 2654435761 % 40).astype(np.uint32)
        ids[0, :4] = [0, 1, 0xFFFFFFFF, 0x80000000]
        return ids
    y, x = np.mgrid[0:h, 0:w]
    ramp = 0.18 + 0.6 * (x / w) * (1.0 - 0.5 * y / h) + 0.1 * phase
    # Grain quantised to 2^-10, so float files stay small.
    grain = np.round(RNG.normal(0.0, 0.02, size=(h, w)) * 1024.0) / 1024.0
    pixels = (np.round(ramp * 1024.0) / 1024.0 + grain).astype(np.float32)
    # Exact values that a careless conversion gets wrong: a half subnormal, the
    # largest half, negative zero, a negative value and infinity. Not in PIZ
    # files: with them PIZ would store its blocks uncompressed, untested.
    if specials:
        pixels[0, :5] = [5.96e-8, 65504.0, -0.0, -1.5, np.inf]
    return pixels.astype(dtype)


def header(compression, window=DATA_WINDOW, tiled=False, **extra):
    hdr = {
        "compression": COMPRESSIONS[compression],
        "type": OpenEXR.tiledimage if tiled else OpenEXR.scanlineimage,
        "dataWindow": box(window),
        "displayWindow": box(DISPLAY_WINDOW),
    }
    if tiled:
        tiles = OpenEXR.TileDescription()
        tiles.xSize, tiles.ySize = 16, 16
        tiles.mode, tiles.roundingMode = OpenEXR.ONE_LEVEL, OpenEXR.ROUND_DOWN
        hdr["tiles"] = tiles
    hdr.update(extra)
    return hdr


def channels(names, window, dtype, specials=True):
    return {name: image(window, dtype, i, specials) for i, name in enumerate(names)}


def canonical_md5(path, layer=None):
    """The md5 and layout of the canonical pixels of `path`, read back with OpenEXR."""
    f = OpenEXR.File(path, separate_channels=True)
    read = {name: ch.pixels for name, ch in f.channels().items()}
    prefix = f"{layer}." if layer else ""
    in_layer = {n[len(prefix):]: n for n in sorted(read) if n.startswith(prefix)} if layer else {
        n: n for n in sorted(read)}
    rgba = [in_layer[c] for c in "RGBA" if c in in_layer]
    selected = rgba or [in_layer[n] for n in sorted(in_layer, key=lambda n: in_layer[n])]
    planes = []
    for name in selected:
        p = read[name]
        p = p.astype("<u4") if p.dtype == np.uint32 else p.astype("<f4").view("<u4")
        planes.append(p)
    data = np.stack(planes, axis=-1)
    h, w = data.shape[:2]
    short = [n[len(prefix):] for n in selected]
    floats = all(read[n].dtype != np.uint32 for n in selected)
    if floats and short == ["R", "G", "B"]:
        layout = "rgb"
    elif floats and short == ["R", "G", "B", "A"]:
        layout = "rgba"
    else:
        layout = f"samples{len(selected)}"
    return w, h, layout, hashlib.md5(data.astype("<u4").tobytes()).hexdigest()


def main():
    files = []  # (name, layers to check, header, channels or parts)

    def write(name, hdr, chans, layers=(None,)):
        OpenEXR.File(hdr, chans).write(os.path.join(HERE, name))
        files.append((name, layers))

    # Every compression, scanline, half RGBA.
    for comp in COMPRESSIONS:
        write(f"scan-{comp}-half-rgba.exr", header(comp),
              channels("RGBA", DATA_WINDOW, np.float16, specials=comp != "piz"))
    # Tiled (16x16, partial tiles at the right and bottom), half RGB.
    for comp in ["none", "zip", "piz", "pxr24", "b44a", "dwaa", "dwab"]:
        write(f"tiled-{comp}-half-rgb.exr", header(comp, tiled=True),
              channels("RGB", DATA_WINDOW, np.float16, specials=comp != "piz"))
    # Float samples.
    write("scan-zip-float-rgb.exr", header("zip"), channels("RGB", DATA_WINDOW, np.float32))
    write("tiled-piz-float-rgba.exr", header("piz", tiled=True),
          channels("RGBA", DATA_WINDOW, np.float32, specials=False))
    write("scan-pxr24-float-rgba.exr", header("pxr24"), channels("RGBA", DATA_WINDOW, np.float32))
    # Uint samples; with no R, G, B or A every channel comes, in the file's order (Z, id).
    uint_window = DATA_WINDOW
    write("scan-zips-uint-id-z.exr", header("zips"),
          {"id": image(uint_window, np.uint32, 0), "Z": image(uint_window, np.float32, 1)})
    write("scan-piz-uint-rgb.exr", header("piz"), channels("RGB", DATA_WINDOW, np.uint32))
    write("tiled-rle-uint-rgb.exr", header("rle", tiled=True), channels("RGB", DATA_WINDOW, np.uint32))
    # Mixed sample types in RGB order.
    write("scan-zip-mixed-rgb.exr", header("zip"), {
        "R": image(DATA_WINDOW, np.float16, 0),
        "G": image(DATA_WINDOW, np.float32, 1),
        "B": image(DATA_WINDOW, np.uint32, 2),
    })
    # Layers: the default layer, a float RGB layer and a single-channel one.
    layered = channels("RGBA", DATA_WINDOW, np.float16, specials=False)
    layered.update({f"diffuse.{c}": image(DATA_WINDOW, np.float32, i, False) for i, c in enumerate("RGB")})
    layered["depth.Z"] = image(DATA_WINDOW, np.float32, 3, False)
    write("scan-piz-layers.exr", header("piz"), layered, layers=(None, "diffuse", "depth"))
    # A negative data window, and decreasing line order.
    write("scan-rle-negative-window.exr", header("rle", window=NEGATIVE_WINDOW),
          channels("RGBA", NEGATIVE_WINDOW, np.float16))
    write("scan-piz-decreasing-y.exr", header("piz", lineOrder=OpenEXR.DECREASING_Y),
          channels("RGB", DATA_WINDOW, np.float16, specials=False))
    # Multi-part: part 0 is decoded.
    part0 = OpenEXR.Part(header("zip"), channels("RGB", DATA_WINDOW, np.float16), "beauty")
    part1 = OpenEXR.Part(header("zip"), {"Z": image(DATA_WINDOW, np.float32, 4)}, "depth")
    OpenEXR.File([part0, part1]).write(os.path.join(HERE, "multipart-zip.exr"))
    files.append(("multipart-zip.exr", (None,)))

    # Deep data, which playsim does not decode (not in expected.tsv).
    w, h = 5, 4
    deep = np.empty((h, w), dtype=object)
    for y in range(h):
        for x in range(w):
            deep[y, x] = np.arange((x + y) % 3, dtype=np.float32) + 1.0
    OpenEXR.File({"type": OpenEXR.deepscanline, "compression": OpenEXR.ZIPS_COMPRESSION},
                 {"Z": deep}).write(os.path.join(HERE, "deep-zips.exr"))

    rows = ["# file\tlayer\tcompression\ttiled\twidth\theight\tlayout\tmd5"]
    for name, layers in files:
        path = os.path.join(HERE, name)
        hdr = OpenEXR.File(path, header_only=True).header()
        comp = [k for k, v in COMPRESSIONS.items() if v == hdr["compression"]][0]
        tiled = int(hdr["type"] == OpenEXR.tiledimage)
        for layer in layers:
            w, h, layout, md5 = canonical_md5(path, layer)
            rows.append(f"{name}\t{layer or '-'}\t{comp}\t{tiled}\t{w}\t{h}\t{layout}\t{md5}")
    with open(os.path.join(HERE, "expected.tsv"), "w") as out:
        out.write("\n".join(rows) + "\n")
    total = sum(os.path.getsize(os.path.join(HERE, f)) for f in os.listdir(HERE) if f.endswith(".exr"))
    print(f"{len(rows) - 1} checks, {total} bytes of EXR", file=sys.stderr)


if __name__ == "__main__":
    main()
