// libFuzzer target: the restart-marker layout parser (decode/jpeg_restart.h)
// and, where it parses, cutting a region out; and the marker rewriter.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "decode/jpeg_restart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  std::span<const std::byte> jpeg(reinterpret_cast<const std::byte*>(data + 4), size - 4);
  stoke::internal::RestartLayout layout;
  if (layout.Parse(jpeg) && layout.width() > 0 && layout.height() > 0) {
    // A rectangle inside the image, as the decoder asks for one.
    const int x0 = data[0] % layout.width(), y0 = data[1] % layout.height();
    const int x1 = x0 + 1 + data[2] % (layout.width() - x0);
    const int y1 = y0 + 1 + data[3] % (layout.height() - y0);
    std::vector<std::byte> out;
    int ox = 0, oy = 0;
    layout.Cut(x0, y0, x1, y1, &out, &ox, &oy);
  }
  std::vector<std::byte> rewritten;
  stoke::internal::AddRestartMarkers(jpeg, &rewritten).IgnoreError();
  return 0;
}
