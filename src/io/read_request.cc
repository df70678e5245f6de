#include "io/read_request.h"

#include <cstring>

namespace stoke::internal {
namespace {

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

size_t ReadBufferCapacity(uint64_t length, bool whole_file, bool direct) {
  // whole_file reads one byte more than allowed to tell "exactly full" from "too big".
  const uint64_t want = length + (whole_file ? 1 : 0);
  if (!direct) return want;
  // Aligned start before the offset and aligned end after it.
  return RoundUp(want, kDirectAlignment) + kDirectAlignment;
}

void PrepareRead(ReadRequest* r) {
  r->status = Status::Ok();
  r->stored = {};
  r->bytes_read = 0;
  r->done = 0;
  const uint64_t want = r->length + (r->whole_file ? 1 : 0);
  if (r->file_options.direct) {
    r->read_offset = r->offset / kDirectAlignment * kDirectAlignment;
    r->read_length = RoundUp(r->offset + want, kDirectAlignment) - r->read_offset;
  } else {
    r->read_offset = r->offset;
    r->read_length = want;
  }
}

bool CompleteWithoutIo(ReadRequest* r) {
  if (r->cancelled && r->cancelled->load(std::memory_order_relaxed)) {
    r->status = CancelledError("read cancelled: the loader is stopping or seeking");
    return true;
  }
  if (r->memory) {
    r->stored = {r->memory, r->length};
    return true;
  }
  return false;
}

bool OpenIfNeeded(ReadRequest* r) {
  if (r->file) return true;
  auto opened = r->file_system->Open(*r->path, r->file_options);
  if (!opened.ok()) {
    r->status = opened.status();
    return false;
  }
  r->owned_file = std::move(opened).value();
  r->file = r->owned_file.get();
  return true;
}

void FinishRead(ReadRequest* r) {
  r->bytes_read = r->done;
  const uint64_t skip = r->offset - r->read_offset;
  const uint64_t available = r->done > skip ? r->done - skip : 0;
  const std::byte* start = r->buffer.data() + skip;
  if (r->whole_file) {
    if (available > r->length) {
      r->status = DataLossError(*r->path + ": file is larger than " + std::to_string(r->length) +
                                " bytes, the most one sample of this dataset may hold");
      return;
    }
    r->stored = {start, available};
    return;
  }
  if (available < r->length) {
    r->status = DataLossError(*r->path + ": truncated: expected " + std::to_string(r->length) +
                              " bytes at offset " + std::to_string(r->offset) +
                              ", the file ends after " + std::to_string(available));
    return;
  }
  r->stored = {start, r->length};
}

void ReadBlocking(ReadRequest* r) {
  if (!OpenIfNeeded(r)) return;
  while (r->done < r->read_length) {
    const uint64_t ask = r->read_length - r->done;
    StatusOr<size_t> n = r->file->ReadAt(r->read_offset + r->done, r->buffer.subspan(r->done, ask));
    if (!n.ok()) {
      r->status = n.status();
      return;
    }
    if (*n == 0) break;  // end of file
    r->done += *n;
    // With O_DIRECT a short read means end of file; asking again at an unaligned
    // offset would fail with EINVAL.
    if (r->file_options.direct && *n < ask) break;
  }
  FinishRead(r);
}

}  // namespace stoke::internal
