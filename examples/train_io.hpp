// gizml-train's files: the gzip'd IDX data (zlib), SHA-256, safetensors and a small PNG writer
// (zlib's deflate and crc32) with a 5 x 7 font for the plot's labels. Plain code, no other library.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace train_io {

// ---- IDX (gzip'd) ------------------------------------------------------------------------------

/// An IDX file of unsigned bytes: its extents (after the magic) and its values.
struct Idx {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;
};

/// Reads a gzip'd IDX file of unsigned bytes (magic 0x00000801 / 0x00000803); throws
/// std::runtime_error naming the file for a missing, unreadable, malformed or truncated one.
inline Idx readIdxGz(const std::string& path, int wantRank) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot open it (missing? bash tools/train.sh installs Debian's dataset-fashion-mnist)");
  auto readExactly = [&](void* dst, std::size_t bytes, const std::string& what) {
    std::size_t got = 0;
    while (got < bytes) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - got, 1u << 30));
      const int r = gzread(f, static_cast<char*>(dst) + got, chunk);
      if (r < 0) {
        int err = 0;
        const std::string msg = gzerror(f, &err);
        gzclose(f);
        throw std::runtime_error(path + ": cannot read its " + what + ": " + msg);
      }
      if (r == 0) {
        gzclose(f);
        throw std::runtime_error(path + ": truncated: " + std::to_string(bytes) + " bytes of " + what + " expected, " +
                                 std::to_string(got) + " found");
      }
      got += static_cast<std::size_t>(r);
    }
  };
  unsigned char head[4];
  readExactly(head, 4, "header");
  if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != wantRank) {
    gzclose(f);
    throw std::runtime_error(path + ": not an IDX file of unsigned bytes and rank " + std::to_string(wantRank) +
                             " (magic " + std::to_string(head[2]) + " " + std::to_string(head[3]) + ")");
  }
  Idx idx;
  std::size_t count = 1;
  for (int d = 0; d < wantRank; ++d) {
    unsigned char b[4];
    readExactly(b, 4, "extents");
    const std::int64_t e = (std::int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    idx.dims.push_back(e);
    count *= static_cast<std::size_t>(e);
  }
  idx.data.resize(count);
  readExactly(idx.data.data(), count, "values");
  gzclose(f);
  return idx;
}

// ---- SHA-256 (FIPS 180-4) --------------------------------------------------------------------------

inline std::string sha256Hex(const std::vector<std::uint8_t>& msg) {
  static const std::uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
      0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
      0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
      0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
      0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
      0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::vector<std::uint8_t> m = msg;
  const std::uint64_t bits = static_cast<std::uint64_t>(msg.size()) * 8;
  m.push_back(0x80);
  while (m.size() % 64 != 56) m.push_back(0);
  for (int i = 7; i >= 0; --i) m.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
  auto rotr = [](std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  for (std::size_t off = 0; off < m.size(); off += 64) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (std::uint32_t{m[off + 4 * i]} << 24) | (std::uint32_t{m[off + 4 * i + 1]} << 16) |
             (std::uint32_t{m[off + 4 * i + 2]} << 8) | m[off + 4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
  }
  char out[65];
  for (int i = 0; i < 8; ++i) std::snprintf(out + 8 * i, 9, "%08x", h[i]);
  return std::string(out, 64);
}

// ---- safetensors -------------------------------------------------------------------------------------

struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

/// The safetensors bytes of F32 tensors, in the order given: an 8-byte little-endian header
/// length, the JSON header (padded with spaces to a multiple of 8), the little-endian data.
inline std::vector<std::uint8_t> safetensorsBytes(const std::vector<NamedTensor>& tensors) {
  std::string json = "{\"__metadata__\":{\"format\":\"pt\",\"written_by\":\"gizml-train\"}";
  std::uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    json += ",\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) json += (i ? "," : "") + std::to_string(t.shape[i]);
    const std::uint64_t bytes = t.values.size() * 4;
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  json += "}";
  while (json.size() % 8 != 0) json += ' ';
  std::vector<std::uint8_t> out;
  const std::uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), json.begin(), json.end());
  for (const NamedTensor& t : tensors)
    for (float v : t.values) {
      std::uint32_t b;
      std::memcpy(&b, &v, 4);
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(b >> (8 * i)));
    }
  return out;
}

// ---- PNG --------------------------------------------------------------------------------------------

/// An RGB canvas with lines, dots and 5 x 7 text.
struct Canvas {
  int w, h;
  std::vector<std::uint8_t> rgb;
  Canvas(int width, int height) : w(width), h(height), rgb(static_cast<std::size_t>(width) * height * 3, 255) {}
  void set(int x, int y, std::array<std::uint8_t, 3> c) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
    p[0] = c[0], p[1] = c[1], p[2] = c[2];
  }
  void line(int x0, int y0, int x1, int y1, std::array<std::uint8_t, 3> c, int thick = 1) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
      for (int a = 0; a < thick; ++a)
        for (int b = 0; b < thick; ++b) set(x0 + a, y0 + b, c);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  void dot(int x, int y, std::array<std::uint8_t, 3> c) {
    for (int a = -2; a <= 2; ++a)
      for (int b = -2; b <= 2; ++b) set(x + a, y + b, c);
  }
  /// Text in a 5 x 7 font (digits, letters, space . % / : - =), scaled `s`, top-left at (x, y).
  void text(int x, int y, const std::string& s, std::array<std::uint8_t, 3> c, int scale = 1) {
    for (char ch : s) {
      const std::uint8_t* g = glyph(ch);
      for (int r = 0; r < 7; ++r)
        for (int col = 0; col < 5; ++col)
          if (g[r] & (0x10 >> col))
            for (int a = 0; a < scale; ++a)
              for (int b = 0; b < scale; ++b) set(x + col * scale + a, y + r * scale + b, c);
      x += 6 * scale;
    }
  }
  static const std::uint8_t* glyph(char ch) {
    static const std::uint8_t font[][7] = {
        {0, 0, 0, 0, 0, 0, 0},                           // space
        {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e},      // 0
        {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e},      // 1
        {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f},      // 2
        {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e},      // 3
        {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02},      // 4
        {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e},      // 5
        {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e},      // 6
        {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},      // 7
        {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e},      // 8
        {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c},      // 9
        {0, 0, 0, 0, 0, 0x0c, 0x0c},                     // .
        {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03},      // %
        {0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10},      // /
        {0, 0x0c, 0x0c, 0, 0x0c, 0x0c, 0},               // :
        {0, 0, 0, 0x1f, 0, 0, 0},                        // -
        {0, 0, 0x1f, 0, 0x1f, 0, 0},                     // =
        {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11},      // A
        {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e},      // B
        {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e},      // C
        {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c},      // D
        {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f},      // E
        {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10},      // F
        {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f},      // G
        {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11},      // H
        {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e},      // I
        {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c},      // J
        {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11},      // K
        {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f},      // L
        {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11},      // M
        {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11},      // N
        {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},      // O
        {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10},      // P
        {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d},      // Q
        {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11},      // R
        {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e},      // S
        {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},      // T
        {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},      // U
        {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04},      // V
        {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a},      // W
        {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11},      // X
        {0x11, 0x11, 0x11, 0x0a, 0x04, 0x04, 0x04},      // Y
        {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f},      // Z
    };
    if (ch >= '0' && ch <= '9') return font[1 + (ch - '0')];
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
    if (ch >= 'A' && ch <= 'Z') return font[17 + (ch - 'A')];
    switch (ch) {
      case '.': return font[11];
      case '%': return font[12];
      case '/': return font[13];
      case ':': return font[14];
      case '-': return font[15];
      case '=': return font[16];
      default: return font[0];
    }
  }
};

/// The PNG bytes of an RGB canvas (8 bits a channel, filter 0 on every row, zlib's deflate).
inline std::vector<std::uint8_t> pngBytes(const Canvas& c) {
  std::vector<std::uint8_t> raw;
  raw.reserve(static_cast<std::size_t>(c.h) * (c.w * 3 + 1));
  for (int y = 0; y < c.h; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), c.rgb.begin() + static_cast<std::ptrdiff_t>(y) * c.w * 3,
               c.rgb.begin() + static_cast<std::ptrdiff_t>(y + 1) * c.w * 3);
  }
  uLongf zlen = compressBound(static_cast<uLong>(raw.size()));
  std::vector<std::uint8_t> z(zlen);
  if (compress2(z.data(), &zlen, raw.data(), static_cast<uLong>(raw.size()), 9) != Z_OK)
    throw std::runtime_error("png: zlib's compress2 failed");
  z.resize(zlen);
  std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  auto u32 = [&](std::vector<std::uint8_t>& v, std::uint32_t x) {
    for (int i = 3; i >= 0; --i) v.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
  };
  auto chunk = [&](const char* type, const std::vector<std::uint8_t>& data) {
    u32(out, static_cast<std::uint32_t>(data.size()));
    std::vector<std::uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    out.insert(out.end(), body.begin(), body.end());
    u32(out, static_cast<std::uint32_t>(crc32(0L, body.data(), static_cast<uInt>(body.size()))));
  };
  std::vector<std::uint8_t> ihdr;
  u32(ihdr, static_cast<std::uint32_t>(c.w));
  u32(ihdr, static_cast<std::uint32_t>(c.h));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB, deflate, filter 0, no interlace
  chunk("IHDR", ihdr);
  chunk("IDAT", z);
  chunk("IEND", {});
  return out;
}

inline void writeFile(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error(path + ": cannot write it");
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error(path + ": cannot write it (disk full?)");
}

}  // namespace train_io
