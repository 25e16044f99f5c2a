#!/usr/bin/env python3
"""Writes the small EXR test files for playsim-exr's exrs backend, and their expected canonical md5s.

Run from anywhere with the OpenEXR Python package (3.5) and numpy, and with OpenEXR's
`exrmaketiled` on PATH (Debian/Ubuntu: openexr) for the mip-map and rip-map files:

    python3 -m venv /work/venv-exr && /work/venv-exr/bin/pip install openexr numpy
    /work/venv-exr/bin/python crates/playsim-exr/tests/data/make.py

Every file is written by OpenEXR and read back by OpenEXR; expected.tsv holds, per file
and layer, the md5 of the canonical pixels computed from what OpenEXR read back (so
lossy methods are checked against OpenEXR's own decode): the data window row by row,
channels R, G, B, A (those that exist) or else every channel in file order, each sample
4 bytes little-endian, half and float as f32, uint as u32.
"""

import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np
import OpenEXR

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 21, 35  # odd sizes: partial PIZ/B44 blocks and partial tiles
RNG = np.random.default_rng(20240611)

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


def image(w=W, h=H, scale=1.0):
    """A smooth gradient with fine grain, in a narrow range of values, so that
    every method really compresses it: OpenEXR stores a block raw when that is
    smaller, and then the decompressor goes untested. (PIZ's bitmap covers the
    range of 16-bit words used, so floats keep only 8 fraction bits here.)"""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = 0.2 + 0.6 * (x / w) * (y / h) + 0.1 * np.sin(x / 5.0)
    grainy = (base + RNG.normal(0.0, 0.002, (h, w))) * scale
    return (np.round(grainy * 256) / 256).astype(np.float32)


def noisy(w=W, h=H, scale=1.0):
    """Full-precision floats with strong grain: the lossy methods really lose something on these."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    return ((0.5 + 0.3 * np.sin(x / 3.0 + y / 4.0) + RNG.normal(0.0, 0.05, (h, w))) * scale).astype(np.float32)


def specials(a):
    """Puts half-float edge cases into the first row: zeros, denormals, extremes, infinities, a quiet NaN."""
    bits = np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00],
                    dtype=np.uint16)
    a = a.copy()
    a[0, : len(bits)] = bits.view(np.float16)
    return a


def box(x0, y0, x1, y1):
    return (np.array([x0, y0], dtype=np.int32), np.array([x1, y1], dtype=np.int32))


def write(name, channels, compression="zip", tiles=None, **header):
    hdr = {"compression": COMPRESSIONS[compression], "type": OpenEXR.scanlineimage}
    if tiles is not None:
        hdr["type"] = OpenEXR.tiledimage
        hdr["tiles"] = tiles
    hdr.update(header)
    OpenEXR.File(hdr, channels).write(os.path.join(HERE, name))


def tile_description(x, y):
    td = OpenEXR.TileDescription()
    td.xSize, td.ySize, td.mode = x, y, OpenEXR.ONE_LEVEL
    return td


def canonical_md5(path, layer):
    """md5 of the canonical pixels of the first part, from OpenEXR's own decode."""
    f = OpenEXR.File(path, separate_channels=True)
    chans = f.channels(0)
    names = sorted(chans)  # EXR stores channels sorted by name
    if layer is None:
        in_layer = [(n, n) for n in names]
    else:
        in_layer = [(n[len(layer) + 1:], n) for n in names if n.startswith(layer + ".")]
    rgba = [full for want in "RGBA" for short, full in in_layer if short == want]
    selected = rgba if rgba else [full for _, full in in_layer]
    planes = []
    for n in selected:
        p = chans[n].pixels
        if p.dtype == np.uint32:
            planes.append(p.astype("<u4"))
        else:
            planes.append(p.astype(np.float32).view(np.uint32).astype("<u4"))
    pixels = np.stack(planes, axis=-1)
    h, w = pixels.shape[:2]
    return selected, w, h, hashlib.md5(pixels.tobytes()).hexdigest()


def main():
    for old in os.listdir(HERE):
        if old.endswith(".exr"):
            os.remove(os.path.join(HERE, old))

    r, g, b, a = (image().astype(np.float16) for _ in range(4))
    # Specials where the method keeps them and the block still compresses:
    # B44 does not keep infinities or NaNs, and the full range of values they
    # add to PIZ's bitmap makes a small block larger than raw.
    rs = specials(r)
    for c in COMPRESSIONS:
        if c.startswith("dwa"):
            continue
        red = r if c in ("piz", "b44", "b44a") else rs
        write(f"rgba_half_{c}.exr", {"R": red, "G": g, "B": b, "A": a}, c)
    # B44 and PXR24 where they lose precision: OpenEXR's lossy decode is the reference.
    n16 = [noisy(scale=20.0).astype(np.float16) for _ in range(3)]
    write("rgb_half_b44_lossy.exr", dict(zip("RGB", n16)), "b44")
    write("rgb_half_b44a_lossy.exr", dict(zip("RGB", n16)), "b44a")
    write("z_float_pxr24_lossy.exr", {"Z": noisy(scale=1000.0)}, "pxr24")
    # DWA files must be refused by the exrs backend.
    write("rgb_half_dwaa.exr", {"R": r, "G": g, "B": b}, "dwaa")
    write("rgb_half_dwab.exr", {"R": r, "G": g, "B": b}, "dwab")

    rf, gf, bf = image(scale=100.0), image(), image(scale=-3.0)
    write("rgb_float_zip.exr", {"R": rf, "G": gf, "B": bf}, "zip")
    write("rgb_float_pxr24.exr", {"R": rf, "G": gf, "B": bf}, "pxr24")  # lossy for float
    write("rgb_float_b44.exr", {"R": rf, "G": gf, "B": bf}, "b44")  # b44 stores float raw

    u = (image() * 1000).astype(np.uint32)
    u_extremes = u.copy()
    u_extremes[0, 0], u_extremes[0, 1] = 0, 0xFFFFFFFF
    for c in ("none", "rle", "zips", "piz", "pxr24", "b44"):
        write(f"xyz_mixed_{c}.exr", {"X": g, "Y": gf, "Z": u if c == "piz" else u_extremes}, c)
    write("z_float_zip.exr", {"Z": rf}, "zip")
    write("id_uint_rle.exr", {"id": u_extremes}, "rle")

    write("layers_zip.exr", {"R": r, "G": g, "B": b, "diffuse.R": rf, "diffuse.G": gf, "diffuse.B": bf,
                             "specular.A": a}, "zip")

    # A data window smaller than the display window, away from the origin, and one at negative coordinates.
    write("window_offset_piz.exr", {"R": r, "G": g, "B": b, "A": a}, "piz",
          dataWindow=box(5, 7, 5 + W - 1, 7 + H - 1), displayWindow=box(0, 0, 63, 63))
    write("window_negative_zip.exr", {"R": rf, "G": gf, "B": bf}, "zip",
          dataWindow=box(-20, -3, -20 + W - 1, -3 + H - 1), displayWindow=box(0, 0, 15, 15))
    write("decreasing_y_zips.exr", {"R": r, "G": g, "B": b}, "zips", lineOrder=OpenEXR.DECREASING_Y)

    write("tiled_rgba_half_piz.exr", {"R": r, "G": g, "B": b, "A": a}, "piz", tiles=tile_description(32, 16))
    write("tiled_xyz_mixed_zip.exr", {"X": g, "Y": gf, "Z": u}, "zip", tiles=tile_description(8, 16),
          dataWindow=box(3, -4, 3 + W - 1, -4 + H - 1), displayWindow=box(0, 0, 63, 63))
    write("tiled_big_tiles_rle.exr", {"R": r, "G": g, "B": b}, "rle", tiles=tile_description(64, 64))

    # Multi-resolution tiled files come from OpenEXR's exrmaketiled (the Python package writes one level only).
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src.exr")
        OpenEXR.File({"compression": OpenEXR.NO_COMPRESSION, "type": OpenEXR.scanlineimage},
                     {"R": r, "G": g, "B": b, "A": a}).write(src)
        subprocess.run(["exrmaketiled", "-m", "-t", "32", "16", "-z", "piz", src,
                        os.path.join(HERE, "mipmap_piz.exr")], check=True)
        subprocess.run(["exrmaketiled", "-r", "-u", "-t", "16", "16", "-z", "zip", src,
                        os.path.join(HERE, "ripmap_zip.exr")], check=True)

    # Two parts: only the first is decoded.
    OpenEXR.File([
        OpenEXR.Part({"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage},
                     {"R": r, "G": g, "B": b}, name="beauty"),
        OpenEXR.Part({"compression": OpenEXR.PIZ_COMPRESSION, "type": OpenEXR.tiledimage,
                      "tiles": tile_description(16, 16)}, {"Z": rf}, name="depth"),
    ]).write(os.path.join(HERE, "multipart_zip.exr"))

    rows = []
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".exr") or "_dwa" in name:
            continue
        layers = [None, "diffuse", "specular"] if name.startswith("layers") else [None]
        for layer in layers:
            selected, w, h, md5 = canonical_md5(os.path.join(HERE, name), layer)
            rows.append(f"{name}\t{layer or '-'}\t{w}\t{h}\t{','.join(selected)}\t{md5}\n")
    with open(os.path.join(HERE, "expected.tsv"), "w") as out:
        out.write("# file\tlayer\twidth\theight\tchannels\tmd5 (written by make.py)\n")
        out.writelines(rows)
    total = sum(os.path.getsize(os.path.join(HERE, n)) for n in os.listdir(HERE))
    print(f"{len(rows)} expectations, {total} bytes in {HERE}", file=sys.stderr)


if __name__ == "__main__":
    main()
