#include "io/read_request.h"

#include <algorithm>
#include <cstring>

#include "io/mapped_file.h"
#include "io/remote_file.h"

namespace stoke::internal {
namespace {

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The error of a copy from a mapping that raised SIGBUS: DataLoss if the file
// is now too short for the range (truncated since it was mapped), else
// Unavailable (the device failed to read a page).
Status MappingFault(const ReadRequest& r) {
  StatusOr<uint64_t> size = r.file ? r.file->Size() : StatusOr<uint64_t>(uint64_t{0});
  if (size.ok() && *size < r.offset + r.length) {
    const Status truncated =
        TruncatedError(*r.path, r.length, r.offset, *size > r.offset ? *size - r.offset : 0);
    return DataLossError(truncated.message() + " (it shrank while memory-mapped: SIGBUS)");
  }
  return UnavailableError(*r.path + ": reading " + std::to_string(r.length) + " bytes at offset " +
                          std::to_string(r.offset) +
                          " from its memory mapping raised SIGBUS: the device failed to read a "
                          "page (an I/O error)");
}

}  // namespace

bool ShortReadIsEof(const ReadRequest& r) {
  // With O_DIRECT a short read means end of file; asking again at an unaligned
  // offset would fail with EINVAL.
  return r.file_options.direct || r.file->short_read_means_eof();
}

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
  r->http_requests = 0;
  r->http_retries = 0;
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
  if (!r->status.ok()) return true;  // failed by its submitter
  if (r->cancelled && r->cancelled->load(std::memory_order_relaxed)) {
    r->status = CancelledError("read cancelled: the loader is stopping or seeking");
    return true;
  }
  if (r->memory && r->mapped) {
    const MappingCopy copy{r->buffer.data(), r->memory, r->length};
    if (CopyFromMapping(&copy, 1) != 1) {
      r->status = MappingFault(*r);
      return true;
    }
    r->stored = {r->buffer.data(), r->length};
    r->bytes_read = r->length;
    return true;
  }
  if (r->memory) {
    r->stored = {r->memory, r->length};
    r->bytes_read = r->length;  // served from memory (a decompressed file, a preload)
    return true;
  }
  return false;
}

bool OpenIfNeeded(ReadRequest* r) {
  if (r->file) return true;
  if (Status s = r->file_system->OpenReusing(*r->path, r->file_options, &r->owned_file); !s.ok()) {
    r->status = std::move(s);
    return false;
  }
  r->owns_file = true;
  r->file = r->owned_file.get();
  return true;
}

bool OwnsFile(const ReadRequest& r) { return r.owns_file; }

void CloseOwnedFile(ReadRequest* r) {
  if (!r->owns_file) return;
  r->file_system->CloseReusing(&r->owned_file);
  r->owns_file = false;
  r->file = nullptr;
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
    r->status = TruncatedError(*r->path, r->length, r->offset, available);
    return;
  }
  r->stored = {start, r->length};
}

Status TruncatedError(const std::string& path, uint64_t length, uint64_t offset,
                      uint64_t available) {
  return DataLossError(path + ": truncated: expected " + std::to_string(length) +
                       " bytes at offset " + std::to_string(offset) + ", the file ends after " +
                       std::to_string(available));
}

namespace {

// Reads [offset + *done, offset + length) of r's open file into buffer + *done,
// looping over short reads, until all of it is there, the file ends, or a read
// fails (returned). A remote file reads it with one request, cancelled when
// the request is, and counts it in *r.
Status ReadRange(ReadRequest& r, uint64_t offset, std::byte* buffer, uint64_t length,
                 uint64_t* done) {
  if (auto* remote = dynamic_cast<RemoteFile*>(r.file)) {
    uint64_t received = 0;
    int retries = 0;
    const Status s = remote->Read(offset + *done, std::span(buffer + *done, length - *done),
                                  r.cancelled, &received, &retries);
    *done += received;
    r.http_requests += static_cast<uint32_t>(1 + retries);
    r.http_retries += static_cast<uint32_t>(retries);
    return s;
  }
  while (*done < length) {
    const uint64_t ask = std::min(length - *done, kMaxReadChunk);
    StatusOr<size_t> n = r.file->ReadAt(offset + *done, std::span(buffer + *done, ask));
    if (!n.ok()) return n.status();
    if (*n == 0) break;  // end of file
    *done += *n;
    if (*n < ask && ShortReadIsEof(r)) break;
  }
  return Status::Ok();
}

}  // namespace

void ReadBlocking(ReadRequest* r) {
  if (!OpenIfNeeded(r)) return;
  Status s = ReadRange(*r, r->read_offset, r->buffer.data(), r->read_length, &r->done);
  if (!s.ok()) {
    r->status = std::move(s);
    return;
  }
  FinishRead(r);
}

size_t CoalescibleCount(ReadRequest* const* r, size_t n) {
  const ReadRequest* first = r[0];
  if (first->memory || first->whole_file || first->file == nullptr || first->file_options.direct) {
    return 1;
  }
  size_t k = 1;
  while (k < n) {
    const ReadRequest* prev = r[k - 1];
    const ReadRequest* next = r[k];
    if (next->memory || next->whole_file || next->file != first->file ||
        next->file_options.direct || next->read_offset != prev->read_offset + prev->read_length ||
        next->buffer.data() != prev->buffer.data() + prev->read_length) {
      break;
    }
    ++k;
  }
  return k;
}

uint64_t CoalescedLength(ReadRequest* const* r, size_t k) {
  return r[k - 1]->read_offset + r[k - 1]->read_length - r[0]->read_offset;
}

void FinishCoalesced(ReadRequest* const* r, size_t k, uint64_t done) {
  for (size_t i = 0; i < k; ++i) {
    const uint64_t start = r[i]->read_offset - r[0]->read_offset;
    const uint64_t got = done > start ? done - start : 0;
    r[i]->done = got < r[i]->read_length ? got : r[i]->read_length;
    FinishRead(r[i]);
  }
}

namespace {

// The group's copies from a mapping, made up front with one guard per few
// dozen samples (CompleteWithoutIo's one per sample costs a sigsetjmp each);
// each copied request then reads from its buffer as from memory.
void CopyMapped(ReadRequest* const* r, size_t n) {
  constexpr size_t kChunk = 64;
  MappingCopy copies[kChunk];
  ReadRequest* requests[kChunk];
  size_t k = 0;
  auto flush = [&] {
    for (size_t done = 0; done < k;) {
      done += CopyFromMapping(copies + done, k - done);
      if (done < k) {
        requests[done]->status = MappingFault(*requests[done]);
        ++done;
      }
    }
    k = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    ReadRequest* q = r[i];
    if (!q->mapped || q->memory == nullptr || !q->status.ok()) continue;
    copies[k] = {q->buffer.data(), q->memory, q->length};
    requests[k] = q;
    q->memory = q->buffer.data();  // a copy: served from memory hereafter
    q->mapped = false;
    if (++k == kChunk) flush();
  }
  flush();
}

}  // namespace

void ReadGroupBlocking(ReadRequest* const* r, size_t n) {
  CopyMapped(r, n);
  size_t i = 0;
  while (i < n) {
    if (CompleteWithoutIo(r[i])) {
      ++i;
      continue;
    }
    const size_t k = CoalescibleCount(r + i, n - i);
    if (k == 1) {
      ReadBlocking(r[i]);
      ++i;
      continue;
    }
    // One read for k samples, straight into their consecutive places.
    ReadRequest& head = *r[i];
    uint64_t done = 0;
    if (ReadRange(head, head.read_offset, head.buffer.data(), CoalescedLength(r + i, k), &done)
            .ok()) {
      FinishCoalesced(r + i, k, done);
    } else {
      for (size_t j = i; j < i + k; ++j) ReadBlocking(r[j]);
    }
    i += k;
  }
}

}  // namespace stoke::internal
