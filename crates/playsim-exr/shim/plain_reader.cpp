// The reference for the openexr backend's cost: a plain program that decodes an
// EXR file from disk N times with the same OpenEXR calls playsim's shim makes
// (Imf::InputFile, a FrameBuffer of FLOAT slices, UINT for uint channels,
// interleaved into one buffer, readPixels over the data window), and prints one
// JSON line with the wall time per frame and the CPU time (getrusage) it took.
//
// Not built by build.rs; `cargo xtask bench` (or a person) builds it with
//
//     g++ -std=c++17 -O2 plain_reader.cpp $(pkg-config --cflags --libs OpenEXR) -o plain_reader
//
// Usage: plain_reader FILE N [CODEC_THREADS]
//
// CODEC_THREADS is playsim's --exr-codec-threads: 1 (the default) decodes on the
// calling thread (OpenEXR's 0 threads); N > 1 gives OpenEXR's global pool and
// the file N threads. The output buffer is allocated once, as playsim reuses its
// frames; the file is opened anew for each frame, as playsim reads each frame.

#include <ImfChannelList.h>
#include <ImfFrameBuffer.h>
#include <ImfHeader.h>
#include <ImfInputFile.h>
#include <ImfThreading.h>
#include <OpenEXRConfig.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto secs = [](const timeval &t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
    return secs(usage.ru_utime) + secs(usage.ru_stime);
}

// The channels playsim decodes by default: R, G, B, A (those that exist), else all in file order.
std::vector<std::string> canonical_channels(const Imf::Header &header) {
    std::vector<std::string> names;
    for (const char *want : {"R", "G", "B", "A"}) {
        if (header.channels().findChannel(want) != nullptr) names.emplace_back(want);
    }
    if (names.empty()) {
        for (auto c = header.channels().begin(); c != header.channels().end(); ++c) names.emplace_back(c.name());
    }
    return names;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s FILE N [CODEC_THREADS]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    const long n_frames = std::strtol(argv[2], nullptr, 10);
    const long codec_threads = argc > 3 ? std::strtol(argv[3], nullptr, 10) : 1;
    if (n_frames < 1 || codec_threads < 1) {
        std::fprintf(stderr, "N and CODEC_THREADS must be at least 1\n");
        return 2;
    }
    const int threads = codec_threads == 1 ? 0 : int(codec_threads);
    Imf::setGlobalThreadCount(threads);

    try {
        std::vector<char> out;
        long width = 0, height = 0;
        size_t n_channels = 0;
        const double cpu0 = cpu_seconds();
        const auto wall0 = std::chrono::steady_clock::now();
        for (long frame = 0; frame < n_frames; ++frame) {
            Imf::InputFile file(path, threads);
            const Imf::Header &header = file.header();
            const Imath::Box2i &dw = header.dataWindow();
            width = long(dw.max.x) - dw.min.x + 1;
            height = long(dw.max.y) - dw.min.y + 1;
            const std::vector<std::string> names = canonical_channels(header);
            n_channels = names.size();
            const size_t x_stride = 4 * n_channels;
            const size_t y_stride = size_t(width) * x_stride;
            out.resize(size_t(height) * y_stride);
            const ptrdiff_t origin = ptrdiff_t(dw.min.x) * ptrdiff_t(x_stride) + ptrdiff_t(dw.min.y) * ptrdiff_t(y_stride);
            Imf::FrameBuffer fb;
            for (size_t i = 0; i < names.size(); ++i) {
                const Imf::PixelType type =
                    header.channels().findChannel(names[i])->type == Imf::UINT ? Imf::UINT : Imf::FLOAT;
                char *base = reinterpret_cast<char *>(reinterpret_cast<uintptr_t>(out.data()) + 4 * i -
                                                      static_cast<uintptr_t>(origin));
                fb.insert(names[i], Imf::Slice(type, base, x_stride, y_stride));
            }
            file.setFrameBuffer(fb);
            file.readPixels(dw.min.y, dw.max.y);
        }
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
        const double cpu = cpu_seconds() - cpu0;
        std::printf("{\"file\": \"%s\", \"openexr\": \"%s\", \"frames\": %ld, \"codec_threads\": %ld, "
                    "\"width\": %ld, \"height\": %ld, \"channels\": %zu, \"ms_per_frame\": %.3f, "
                    "\"cpu_s\": %.3f, \"cpu_ms_per_frame\": %.3f}\n",
                    path, OPENEXR_VERSION_STRING, n_frames, codec_threads, width, height, n_channels,
                    wall * 1e3 / double(n_frames), cpu, cpu * 1e3 / double(n_frames));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "plain_reader: %s\n", e.what());
        return 1;
    }
    return 0;
}
