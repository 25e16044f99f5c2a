/*
 * playsim's C interface to the OpenEXR C++ library: read the header of, and
 * decode, an EXR file that is already in memory (playsim's read buffer).
 *
 * No C++ type crosses this interface and no exception leaves it: every entry
 * point returns an EXR_SHIM_* code, and on failure writes a NUL-terminated
 * message (OpenEXR's own text where there is one) into the caller's buffer.
 * The buffer holding the file is only read, and only while the call runs.
 */
#ifndef PLAYSIM_EXR_SHIM_H
#define PLAYSIM_EXR_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
enum {
    EXR_SHIM_OK = 0,
    /* The bytes are not a valid EXR file: truncated, corrupt header, table or data. */
    EXR_SHIM_MALFORMED = 1,
    /* Valid, but not decoded here: deep data, unknown compression, newer file version. */
    EXR_SHIM_UNSUPPORTED = 2,
    /* The arguments do not fit the file (a channel that is not there, a wrong output length). */
    EXR_SHIM_BAD_ARGUMENT = 3,
    /* An allocation failed (std::bad_alloc), usually from a damaged size field. */
    EXR_SHIM_OUT_OF_MEMORY = 4
};

/* Channel sample types: the values of Imf::PixelType. */
enum { EXR_SHIM_UINT = 0, EXR_SHIM_HALF = 1, EXR_SHIM_FLOAT = 2 };

/* The first part's header. Windows are inclusive: x_min, y_min, x_max, y_max. */
typedef struct exr_shim_header {
    int32_t data_window[4];
    int32_t display_window[4];
    /* Imf::Compression: 0 none, 1 rle, 2 zips, 3 zip, 4 piz, 5 pxr24, 6 b44, 7 b44a, 8 dwaa, 9 dwab. */
    int32_t compression;
    /* 1 when the part is tiled, else 0. */
    int32_t tiled;
    /* The number of channels, each also passed to the callback. */
    int32_t n_channels;
    /*
     * A lower bound on the part's chunks (its first level, for tiled parts),
     * and on the bytes their offset table entries and chunk headers take.
     * A file shorter than min_bytes is damaged or truncated;
     * exr_shim_read_pixels refuses it before OpenEXR allocates the table.
     */
    uint64_t n_chunks;
    uint64_t min_bytes;
} exr_shim_header;

/*
 * Called once per channel, in the file's order, during exr_shim_read_header.
 * `name` is `name_len` bytes, not NUL-terminated, valid only during the call.
 * The callback must not unwind (throw or panic).
 */
typedef void (*exr_shim_channel_fn)(void *ctx, const char *name, size_t name_len, int32_t pixel_type,
                                    int32_t x_sampling, int32_t y_sampling);

/*
 * Reads the header of the EXR file in data[0..len) (the first part of a
 * multi-part file) without reading its offset table or pixels, and checks it
 * with Imf::Header::sanityCheck. Deep data and unknown compression methods
 * return EXR_SHIM_UNSUPPORTED.
 */
int exr_shim_read_header(const uint8_t *data, size_t len, exr_shim_header *header,
                         exr_shim_channel_fn on_channel, void *ctx, char *err, size_t err_len);

/*
 * Decodes the whole data window of the EXR file in data[0..len) (first part)
 * into out[0..out_len): the channels `names[0..n_names)` (NUL-terminated), in
 * that order, interleaved, 4 bytes each in host order: f32 for half and float
 * channels (OpenEXR converts half exactly), u32 for uint channels. Rows are
 * the data window's, top to bottom, with no padding; out_len must be exactly
 * width * height * n_names * 4.
 *
 * threads is OpenEXR's thread count for this file, and the size the shim
 * gives OpenEXR's global thread pool (set only when it changes): 0 decodes on
 * the calling thread; N > 0 lets the file use the pool's N threads. The pool
 * is process-wide, shared by every file decoding at the same time, as in any
 * program that uses OpenEXR; callers should pass one value per process.
 *
 * Compressed chunks are decompressed straight from `data` (the stream says it
 * is memory-mapped); uncompressed parts are copied chunk by chunk (see the
 * comment in exr_shim.cpp).
 */
int exr_shim_read_pixels(const uint8_t *data, size_t len, const char *const *names, size_t n_names,
                         int32_t threads, uint8_t *out, size_t out_len, char *err, size_t err_len);

/*
 * Called once by exr_shim_write with the whole file, valid only during the call.
 * The callback must not unwind (throw or panic).
 */
typedef void (*exr_shim_bytes_fn)(void *ctx, const uint8_t *data, size_t len);

/*
 * Writes a scan-line EXR file of half samples, as Nuke and Flame write one,
 * through OpenEXR's Imf::OutputFile into memory, and hands it to `on_bytes`:
 * `halves` holds width * height * n_channels half floats (their bits, host
 * order), interleaved in rows top to bottom; n_channels is 3 (R, G, B) or
 * 4 (R, G, B, A). `compression` is an Imf::Compression (see exr_shim_header).
 * Compressed on the calling thread (no OpenEXR thread pool).
 */
int exr_shim_write(const uint16_t *halves, size_t n_halves, int32_t width, int32_t height, int32_t n_channels,
                   int32_t compression, exr_shim_bytes_fn on_bytes, void *ctx, char *err, size_t err_len);

/* The OpenEXR version the shim was compiled against, e.g. "3.1.5" (a static string). */
const char *exr_shim_version(void);

#ifdef __cplusplus
}
#endif

#endif
