// playsim's shim over the OpenEXR C++ library: the C entry points declared in
// exr_shim.h. It reads EXR files from playsim's buffer through an Imf::IStream
// over memory, so the storage read stays playsim's and OpenEXR only decodes.

#include "exr_shim.h"

#include <Iex.h>
#include <ImfChannelList.h>
#include <ImfCompression.h>
#include <ImfFrameBuffer.h>
#include <ImfHeader.h>
#include <ImfIO.h>
#include <ImfInputFile.h>
#include <ImfOutputFile.h>
#include <ImfPartType.h>
#include <ImfThreading.h>
#include <ImfTileDescription.h>
#include <ImfVersion.h>
#include <OpenEXRConfig.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// An error the shim raises itself, with the code to return.
class ShimError : public std::runtime_error {
  public:
    ShimError(int code, const std::string &message) : std::runtime_error(message), code_(code) {}
    int code() const { return code_; }

  private:
    int code_;
};

// A read-only stream over [data, data + len). When `mapped`, it says it is
// memory-mapped, so OpenEXR takes pointers into the buffer (readMemoryMapped)
// instead of copying each chunk into its own line or tile buffer; OpenEXR's
// decompressors only read through them (their input is `const char *`), so the
// buffer is never written.
class MemoryStream final : public Imf::IStream {
  public:
    MemoryStream(const uint8_t *data, size_t len, bool mapped)
        : Imf::IStream(""), data_(reinterpret_cast<const char *>(data)), len_(len), pos_(0), mapped_(mapped) {}

    bool isMemoryMapped() const override { return mapped_; }

    // Throws on a short read, as OpenEXR expects of every stream; returns
    // false when the read ends at the last byte.
    bool read(char c[], int n) override {
        const char *p = take(n);
        if (n > 0) std::memcpy(c, p, static_cast<size_t>(n));
        return pos_ < len_;
    }

    char *readMemoryMapped(int n) override {
        // The interface returns `char *`; see the class comment on why this
        // buffer is only read.
        return const_cast<char *>(take(n));
    }

    uint64_t tellg() override { return pos_; }

    // Any position is accepted; a read past the end then throws.
    void seekg(uint64_t pos) override { pos_ = pos; }

    void clear() override {}

  private:
    const char *take(int n) {
        if (n < 0 || pos_ > len_ || static_cast<uint64_t>(n) > len_ - pos_) {
            throw Iex::InputExc("unexpected end of file (reading " + std::to_string(n) + " bytes at offset " +
                                std::to_string(pos_) + " of a " + std::to_string(len_) + "-byte file)");
        }
        const char *p = data_ + pos_;
        pos_ += static_cast<uint64_t>(n);
        return p;
    }

    const char *data_;
    uint64_t len_;
    uint64_t pos_;
    bool mapped_;
};

// A stream into memory, growing as OpenEXR writes; OpenEXR seeks back to
// fill in the line offset table when the file is closed.
class VectorStream final : public Imf::OStream {
  public:
    VectorStream() : Imf::OStream(""), pos_(0) {}

    void write(const char c[], int n) override {
        if (n <= 0) return;
        size_t end = static_cast<size_t>(pos_) + static_cast<size_t>(n);
        if (end > bytes_.size()) bytes_.resize(end);
        std::memcpy(bytes_.data() + pos_, c, static_cast<size_t>(n));
        pos_ = end;
    }

    uint64_t tellp() override { return pos_; }

    void seekp(uint64_t pos) override { pos_ = pos; }

    const std::vector<char> &bytes() const { return bytes_; }

  private:
    std::vector<char> bytes_;
    uint64_t pos_;
};

void set_error(char *err, size_t err_len, const char *message) {
    if (err == nullptr || err_len == 0) return;
    size_t n = std::strlen(message);
    if (n >= err_len) n = err_len - 1;
    std::memcpy(err, message, n);
    err[n] = '\0';
}

// Runs `f`, turning every exception into a code and a message: no exception
// may cross the C interface.
template <class F>
int guarded(char *err, size_t err_len, F &&f) noexcept {
    try {
        return f();
    } catch (const ShimError &e) {
        set_error(err, err_len, e.what());
        return e.code();
    } catch (const std::bad_alloc &) {
        set_error(err, err_len, "out of memory while decoding (a damaged size field?)");
        return EXR_SHIM_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        // OpenEXR reports damaged files with Iex exceptions (InputExc, ArgExc, ...).
        set_error(err, err_len, e.what());
        return EXR_SHIM_MALFORMED;
    } catch (...) {
        set_error(err, err_len, "unknown exception from the OpenEXR library");
        return EXR_SHIM_MALFORMED;
    }
}

// Checks the magic number and the version field, returning the version field.
// (OpenEXR's own check is a protected member of GenericInputFile.)
int check_magic_and_version(const uint8_t *data, size_t len) {
    if (data == nullptr && len != 0) throw ShimError(EXR_SHIM_BAD_ARGUMENT, "null data pointer");
    if (len < 8) {
        throw ShimError(EXR_SHIM_MALFORMED,
                        "not an OpenEXR file: " + std::to_string(len) + " bytes, shorter than the 8-byte preamble");
    }
    // Both fields are little-endian 32-bit integers.
    auto le32 = [&](size_t at) {
        return static_cast<int>(static_cast<uint32_t>(data[at]) | static_cast<uint32_t>(data[at + 1]) << 8 |
                                static_cast<uint32_t>(data[at + 2]) << 16 |
                                static_cast<uint32_t>(data[at + 3]) << 24);
    };
    if (le32(0) != Imf::MAGIC) throw ShimError(EXR_SHIM_MALFORMED, "not an OpenEXR file (bad magic number)");
    int version = le32(4);
    if (Imf::getVersion(version) != Imf::EXR_VERSION) {
        throw ShimError(EXR_SHIM_UNSUPPORTED, "file format version " + std::to_string(Imf::getVersion(version)) +
                                                  " is not supported (only version 2)");
    }
    if (!Imf::supportsFlags(Imf::getFlags(version))) {
        throw ShimError(EXR_SHIM_UNSUPPORTED,
                        "the file uses format features unknown to OpenEXR " OPENEXR_VERSION_STRING);
    }
    return version;
}

// The first part's header, read without the offset table.
Imf::Header read_first_header(const uint8_t *data, size_t len, int version) {
    MemoryStream is(data, len, false);
    is.seekg(8);
    Imf::Header header;
    header.readFrom(is, version);
    return header;
}

bool is_deep(const Imf::Header &header, int version) {
    return header.hasType() ? Imf::isDeepData(header.type()) : Imf::isNonImage(version);
}

bool is_tiled(const Imf::Header &header, int version) {
    return header.hasType() ? Imf::isTiled(header.type()) : Imf::isTiled(version);
}

void require_image(const Imf::Header &header, int version) {
    if (is_deep(header, version)) {
        throw ShimError(EXR_SHIM_UNSUPPORTED, "deep data (" + (header.hasType() ? header.type() : std::string("deep")) +
                                                  ") is not supported");
    }
    if (header.compression() < Imf::NO_COMPRESSION || header.compression() >= Imf::NUM_COMPRESSION_METHODS) {
        throw ShimError(EXR_SHIM_UNSUPPORTED, "unknown compression method (not one of none, rle, zips, zip, piz, "
                                              "pxr24, b44, b44a, dwaa, dwab)");
    }
}

// Scan lines per chunk for each compression method (OpenEXR's numbers).
uint64_t lines_per_chunk(Imf::Compression c) {
    switch (c) {
        case Imf::ZIP_COMPRESSION:
        case Imf::PXR24_COMPRESSION:
            return 16;
        case Imf::PIZ_COMPRESSION:
        case Imf::B44_COMPRESSION:
        case Imf::B44A_COMPRESSION:
        case Imf::DWAA_COMPRESSION:
            return 32;
        case Imf::DWAB_COMPRESSION:
            return 256;
        default:
            return 1;
    }
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// A lower bound on the chunks of the first part and on the bytes they take.
// OpenEXR allocates and zero-fills the whole offset table before reading it,
// so a damaged window or tile size in an 8 KB file could otherwise cost
// gigabytes and seconds per frame (2^28 one-pixel tiles: 3 GB). The bound is
// loose: every chunk needs its 8-byte table entry and its own header (y and
// size, 8 bytes; tile coordinates, level and size, 20 bytes), and only the
// first level of a tiled part is counted.
struct ChunkBound {
    uint64_t nx = 1;
    uint64_t ny = 0;
    uint64_t bytes_per_chunk = 16;

    // Saturates at UINT64_MAX.
    uint64_t chunks() const { return ny != 0 && nx > UINT64_MAX / ny ? UINT64_MAX : nx * ny; }
    uint64_t min_bytes() const {
        uint64_t n = chunks();
        return n > UINT64_MAX / bytes_per_chunk ? UINT64_MAX : n * bytes_per_chunk;
    }
};

ChunkBound chunk_bound(const Imf::Header &h, bool tiled) {
    const Imath::Box2i &dw = h.dataWindow();
    // sanityCheck has refused inverted windows.
    const uint64_t width = uint64_t(int64_t(dw.max.x) - int64_t(dw.min.x) + 1);
    const uint64_t height = uint64_t(int64_t(dw.max.y) - int64_t(dw.min.y) + 1);
    ChunkBound b;
    if (tiled) {
        if (!h.hasTileDescription()) throw ShimError(EXR_SHIM_MALFORMED, "tiled part without a tile description");
        const Imf::TileDescription &t = h.tileDescription();
        if (t.xSize == 0 || t.ySize == 0) throw ShimError(EXR_SHIM_MALFORMED, "zero tile size");
        b.nx = ceil_div(width, t.xSize);
        b.ny = ceil_div(height, t.ySize);
        b.bytes_per_chunk = 28;
    } else {
        b.ny = ceil_div(height, lines_per_chunk(h.compression()));
    }
    return b;
}

// Refuses a part whose offset table and chunks could not fit in the file.
void check_chunks_fit(const ChunkBound &b, size_t len) {
    if (b.min_bytes() > len) {
        throw ShimError(EXR_SHIM_MALFORMED, "the header describes " + std::to_string(b.nx) + "x" +
                                                std::to_string(b.ny) + " chunks, more than a " +
                                                std::to_string(len) +
                                                "-byte file can hold (damaged size or truncated file)");
    }
}

// Bytes a pixel takes over every channel of the part, as stored (2 for half, 4
// for float and uint), which OpenEXR's line and tile buffers hold.
uint64_t bytes_per_pixel(const Imf::Header &h) {
    uint64_t n = 0;
    for (Imf::ChannelList::ConstIterator c = h.channels().begin(); c != h.channels().end(); ++c) {
        n += c.channel().type == Imf::HALF ? 2 : 4;
    }
    return n;
}

// The most bytes a tile may take over the bytes of the whole data window.
const uint64_t MAX_TILE_BYTES_BEYOND_WINDOW = 16u << 20;

// Refuses a tile size whose buffers would dwarf the image. OpenEXR sizes its
// tile buffers and each tile compressor's buffers by the tile description, not
// by the data window, so a 361-byte file with a 16-pixel window and 2^16 x 2^16
// tiles cost a 518 MB allocation (the exr_decode fuzz target). A tile larger
// than the whole window is legitimate (a small image in 64 x 64 tiles); one
// larger than both the window and 16 MiB is refused.
void check_tile_buffers(const Imf::Header &h, bool tiled) {
    if (!tiled || !h.hasTileDescription()) return;
    const Imf::TileDescription &t = h.tileDescription();
    const Imath::Box2i &dw = h.dataWindow();
    const uint64_t width = uint64_t(int64_t(dw.max.x) - int64_t(dw.min.x) + 1);
    const uint64_t height = uint64_t(int64_t(dw.max.y) - int64_t(dw.min.y) + 1);
    const uint64_t pixel = bytes_per_pixel(h);
    // Each factor is below 2^32 and pixel below 2^20 (4096 channels of 4
    // bytes at most is far more than any file; sanityCheck bounds channels by
    // the header's size), so saturate rather than overflow.
    auto product = [](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
        if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
        const uint64_t ab = a * b;
        if (ab != 0 && c > UINT64_MAX / ab) return UINT64_MAX;
        return ab * c;
    };
    const uint64_t tile_bytes = product(t.xSize, t.ySize, pixel);
    const uint64_t window_bytes = product(width, height, pixel);
    const uint64_t most = window_bytes > MAX_TILE_BYTES_BEYOND_WINDOW ? window_bytes : MAX_TILE_BYTES_BEYOND_WINDOW;
    if (tile_bytes > most) {
        throw ShimError(EXR_SHIM_MALFORMED, std::to_string(t.xSize) + "x" + std::to_string(t.ySize) +
                                                " tiles of " + std::to_string(pixel) + " bytes a pixel take " +
                                                std::to_string(tile_bytes) + " bytes each, more than the " +
                                                std::to_string(width) + "x" + std::to_string(height) +
                                                " data window (damaged tile size)");
    }
}

// Reads the first part's header (not its offset table) and refuses what the
// shim does not decode, before OpenEXR allocates anything for the part.
Imf::Header checked_first_header(const uint8_t *data, size_t len, int version, bool &tiled) {
    Imf::Header h = read_first_header(data, len, version);
    require_image(h, version);
    tiled = is_tiled(h, version);
    h.sanityCheck(tiled, Imf::isMultiPart(version));
    return h;
}

// OpenEXR's global thread pool is process-wide: change its size only when a
// caller asks for a different one, and never from two threads at once.
std::atomic<int> g_threads{-1};
std::mutex g_threads_mutex;

void ensure_global_threads(int threads) {
    if (g_threads.load(std::memory_order_acquire) == threads) return;
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    if (g_threads.load(std::memory_order_relaxed) != threads) {
        Imf::setGlobalThreadCount(threads);
        g_threads.store(threads, std::memory_order_release);
    }
}

}  // namespace

extern "C" int exr_shim_read_header(const uint8_t *data, size_t len, exr_shim_header *header,
                                    exr_shim_channel_fn on_channel, void *ctx, char *err, size_t err_len) {
    return guarded(err, err_len, [&]() -> int {
        if (header == nullptr || on_channel == nullptr) throw ShimError(EXR_SHIM_BAD_ARGUMENT, "null argument");
        int version = check_magic_and_version(data, len);
        // Only the (first part's) header: its offset table and pixels are not
        // read, so a damaged size is refused by playsim before OpenEXR
        // allocates anything for it.
        bool tiled = false;
        const Imf::Header h = checked_first_header(data, len, version, tiled);
        // Not refused here, so that the caller can refuse a huge window as
        // such first; exr_shim_read_pixels refuses it.
        const ChunkBound bound = chunk_bound(h, tiled);
        header->n_chunks = bound.chunks();
        header->min_bytes = bound.min_bytes();

        const Imath::Box2i &dw = h.dataWindow();
        const Imath::Box2i &disp = h.displayWindow();
        header->data_window[0] = dw.min.x;
        header->data_window[1] = dw.min.y;
        header->data_window[2] = dw.max.x;
        header->data_window[3] = dw.max.y;
        header->display_window[0] = disp.min.x;
        header->display_window[1] = disp.min.y;
        header->display_window[2] = disp.max.x;
        header->display_window[3] = disp.max.y;
        header->compression = static_cast<int32_t>(h.compression());
        header->tiled = tiled ? 1 : 0;
        int32_t n = 0;
        for (Imf::ChannelList::ConstIterator c = h.channels().begin(); c != h.channels().end(); ++c) {
            const char *name = c.name();
            on_channel(ctx, name, std::strlen(name), static_cast<int32_t>(c.channel().type),
                       c.channel().xSampling, c.channel().ySampling);
            ++n;
        }
        header->n_channels = n;
        return EXR_SHIM_OK;
    });
}

extern "C" int exr_shim_read_pixels(const uint8_t *data, size_t len, const char *const *names, size_t n_names,
                                    int32_t threads, uint8_t *out, size_t out_len, char *err, size_t err_len) {
    return guarded(err, err_len, [&]() -> int {
        if (names == nullptr || n_names == 0 || n_names > 4096) {
            throw ShimError(EXR_SHIM_BAD_ARGUMENT, "between 1 and 4096 channel names are needed");
        }
        if (out == nullptr || threads < 0) throw ShimError(EXR_SHIM_BAD_ARGUMENT, "null output or negative threads");
        int version = check_magic_and_version(data, len);
        ensure_global_threads(threads);

        // OpenEXR 3.1 trusts an uncompressed chunk's declared size: a chunk
        // shorter than its lines is still read in full, past its end. From a
        // memory-mapped stream that read runs past playsim's buffer (and can
        // fault at the end of a mapping); from a copying stream it stays inside
        // OpenEXR's own full-size line buffer. So uncompressed parts, where
        // zero-copy saves nothing but a memcpy, are read by copying. (With a
        // compressor, OpenEXR reads a chunk raw only when it is at least as
        // large as its lines.)
        bool tiled = false;
        const Imf::Header first = checked_first_header(data, len, version, tiled);
        check_chunks_fit(chunk_bound(first, tiled), len);
        check_tile_buffers(first, tiled);
        const bool mapped = first.compression() != Imf::NO_COMPRESSION;
        MemoryStream is(data, len, mapped);
        // Reads the first part of a multi-part file, scanline or tiled.
        Imf::InputFile file(is, threads);
        if (mapped && file.header().compression() == Imf::NO_COMPRESSION) {
            throw ShimError(EXR_SHIM_MALFORMED, "the header's compression changed between two reads");
        }
        const Imf::Header &h = file.header();
        require_image(h, version);

        // Everything below is recomputed from the header OpenEXR read, so the
        // writes stay inside `out` whatever the caller believed.
        const Imath::Box2i &dw = h.dataWindow();
        const int64_t width = int64_t(dw.max.x) - int64_t(dw.min.x) + 1;
        const int64_t height = int64_t(dw.max.y) - int64_t(dw.min.y) + 1;
        if (width <= 0 || height <= 0) throw ShimError(EXR_SHIM_MALFORMED, "empty or inverted data window");
        const size_t x_stride = 4 * n_names;
        // width, height < 2^32 and x_stride <= 2^14, so the products fit in 64 bits.
        const uint64_t y_stride = uint64_t(width) * x_stride;
        if (uint64_t(height) * y_stride != out_len) {
            throw ShimError(EXR_SHIM_BAD_ARGUMENT,
                            "output buffer is " + std::to_string(out_len) + " bytes, the data window needs " +
                                std::to_string(uint64_t(height) * y_stride));
        }
        // OpenEXR addresses pixel (x, y) of a slice at base + x * xStride + y *
        // yStride, in data window coordinates; shift the base so the window's
        // corner lands on `out`. The offset is computed in 64 bits, and the
        // shifted pointer (possibly outside `out`) in integer arithmetic.
        const int64_t origin = int64_t(dw.min.x) * int64_t(x_stride) + int64_t(dw.min.y) * int64_t(y_stride);

        Imf::FrameBuffer fb;
        for (size_t i = 0; i < n_names; ++i) {
            if (names[i] == nullptr) throw ShimError(EXR_SHIM_BAD_ARGUMENT, "null channel name");
            const Imf::Channel *c = h.channels().findChannel(names[i]);
            if (c == nullptr) throw ShimError(EXR_SHIM_BAD_ARGUMENT, std::string("no channel named ") + names[i]);
            if (c->xSampling != 1 || c->ySampling != 1) {
                throw ShimError(EXR_SHIM_UNSUPPORTED, std::string("channel ") + names[i] + " is subsampled");
            }
            if (fb.findSlice(names[i]) != nullptr) {
                throw ShimError(EXR_SHIM_BAD_ARGUMENT, std::string("channel ") + names[i] + " asked for twice");
            }
            // Half and float samples are read as float (OpenEXR converts half
            // exactly); uint as uint.
            Imf::PixelType type = c->type == Imf::UINT ? Imf::UINT : Imf::FLOAT;
            uintptr_t base = reinterpret_cast<uintptr_t>(out) + 4 * i - static_cast<uintptr_t>(origin);
            fb.insert(names[i], Imf::Slice(type, reinterpret_cast<char *>(base), x_stride, y_stride));
        }
        // A zero or negative entry in the offset table; OpenEXR then tries to
        // rebuild the table by scanning the chunks, which can hide damage.
        if (!file.isComplete()) {
            throw ShimError(EXR_SHIM_MALFORMED, "incomplete file: its offset table has missing entries");
        }
        file.setFrameBuffer(fb);
        file.readPixels(dw.min.y, dw.max.y);
        return EXR_SHIM_OK;
    });
}

extern "C" int exr_shim_write(const uint16_t *halves, size_t n_halves, int32_t width, int32_t height, int32_t n_channels,
                   int32_t compression, exr_shim_bytes_fn on_bytes, void *ctx, char *err, size_t err_len) {
    return guarded(err, err_len, [&]() -> int {
        if (halves == nullptr || on_bytes == nullptr) throw ShimError(EXR_SHIM_BAD_ARGUMENT, "null argument");
        if (width <= 0 || height <= 0 || (n_channels != 3 && n_channels != 4)) {
            throw ShimError(EXR_SHIM_BAD_ARGUMENT, "a " + std::to_string(width) + "x" + std::to_string(height) +
                                                       " frame of " + std::to_string(n_channels) +
                                                       " channels cannot be written");
        }
        if (n_halves != static_cast<size_t>(width) * static_cast<size_t>(height) * static_cast<size_t>(n_channels)) {
            throw ShimError(EXR_SHIM_BAD_ARGUMENT, "the samples do not fill the frame");
        }
        if (compression < Imf::NO_COMPRESSION || compression >= Imf::NUM_COMPRESSION_METHODS) {
            throw ShimError(EXR_SHIM_UNSUPPORTED, "unknown compression method " + std::to_string(compression));
        }
        Imf::Header header(width, height);
        header.compression() = static_cast<Imf::Compression>(compression);
        static const char *const names[4] = {"R", "G", "B", "A"};
        Imf::FrameBuffer frame_buffer;
        const size_t x_stride = sizeof(uint16_t) * static_cast<size_t>(n_channels);
        const size_t y_stride = x_stride * static_cast<size_t>(width);
        for (int c = 0; c < n_channels; ++c) {
            header.channels().insert(names[c], Imf::Channel(Imf::HALF));
            // OpenEXR only reads from a frame buffer it writes out.
            char *base = const_cast<char *>(reinterpret_cast<const char *>(halves + c));
            frame_buffer.insert(names[c], Imf::Slice(Imf::HALF, base, x_stride, y_stride));
        }
        VectorStream stream;
        {
            // 0 threads: compressed on this thread, as each encoder of playsim's pool is one.
            Imf::OutputFile file(stream, header, 0);
            file.setFrameBuffer(frame_buffer);
            file.writePixels(height);
        }  // the destructor writes the line offset table
        on_bytes(ctx, reinterpret_cast<const uint8_t *>(stream.bytes().data()), stream.bytes().size());
        return EXR_SHIM_OK;
    });
}

extern "C" const char *exr_shim_version(void) { return OPENEXR_VERSION_STRING; }
