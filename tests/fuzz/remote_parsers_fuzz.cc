// libFuzzer target: the parsers of remote data's text and records: an AWS
// credentials/config file (ParseIni), a remote location (ParseRemote), a
// brace pattern (ExpandBraces), an S3 error body (S3ErrorCode), and a pixel
// record of stoke pack --store raw (ParsePixelRecord). The first byte picks.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "decode/jpeg_resample.h"
#include "io/http_client.h"
#include "io/object_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0:
      stoke::internal::ParseIni(text, "fuzz").status().IgnoreError();
      break;
    case 1:
      stoke::internal::ParseRemote(text).status().IgnoreError();
      break;
    case 2: {
      auto names = stoke::internal::ExpandBraces(text);
      if (names.ok() && names->size() > 1000000) __builtin_trap();  // the bound it promises
      break;
    }
    case 3:
      (void)stoke::internal::S3ErrorCode(text);
      break;
    default: {
      int width = 0, height = 0;
      const uint8_t* pixels = nullptr;
      const std::span<const std::byte> record(reinterpret_cast<const std::byte*>(data + 1),
                                              size - 1);
      if (stoke::internal::ParsePixelRecord(record, &width, &height, &pixels)) {
        // What it promises: the pixels lie inside the record.
        volatile uint8_t last = pixels[static_cast<size_t>(width) * height * 3 - 1];
        (void)last;
      }
    }
  }
  return 0;
}
