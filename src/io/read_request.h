// One read of one sample's stored bytes, as the read engines see it: where from,
// into which buffer, and what came back. The engines know nothing of batches.
#ifndef STOKE_SRC_IO_READ_REQUEST_H_
#define STOKE_SRC_IO_READ_REQUEST_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "io/handler_memory.h"
#include "stoke/file_system.h"
#include "stoke/status.h"

namespace stoke::internal {

struct ReadRequest {
  // ---- Set by the submitter. ----
  FileSystem* file_system = nullptr;
  // An open file, or null: the engine opens `*path` for this read and closes it after.
  RandomAccessFile* file = nullptr;
  const std::string* path = nullptr;
  FileOptions file_options;
  // Non-null: the bytes are already in memory; no I/O.
  const std::byte* memory = nullptr;
  // `memory` lies in a file mapping (MappedFile): it is copied into `buffer`
  // (CopyFromMapping), so that a page the file lost is this read's error, not a
  // SIGBUS in whoever reads the bytes next.
  bool mapped = false;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool whole_file = false;  // read to the end of the file; more than `length` bytes is DataLoss
  // Where to read: capacity >= ReadBufferCapacity(length, whole_file, direct), and
  // kDirectAlignment-aligned when direct.
  std::span<std::byte> buffer;
  // Set: skip the I/O and complete with Cancelled (the loader is stopping or seeking).
  const std::atomic<bool>* cancelled = nullptr;

  // ---- Set by the engine when the request completes. ----
  Status status;
  // The sample's stored bytes: inside `buffer` (or `memory`).
  std::span<const std::byte> stored;
  uint64_t bytes_read = 0;  // bytes that came from storage, or from memory
  // Remote files: HTTP requests made for this read (first attempts and
  // retries; a merged read counts on its first request) and of those, retries.
  uint32_t http_requests = 0;
  uint32_t http_retries = 0;

  // ---- Engine-private. ----
  HandlerMemory handler_memory;  // for the engine's one Asio operation in flight
  // A file opened for this read alone (FileSystem::OpenReusing), kept between
  // reads for the file system to reuse; open iff owns_file.
  std::unique_ptr<RandomAccessFile> owned_file;
  bool owns_file = false;
  uint64_t read_offset = 0;  // aligned down when direct
  uint64_t read_length = 0;  // bytes to ask for from read_offset
  uint64_t done = 0;         // bytes read so far from read_offset
};

// Reads submitted and completed together: the engines' unit of work, so that
// queueing and wake-ups are paid once per group, not once per sample. Reads of
// one file that are contiguous both on disk and in memory are merged into one.
struct ReadGroup {
  // Set by the submitter: requests[0..count) are this group's reads.
  ReadRequest* const* requests = nullptr;
  size_t count = 0;

  // ---- Engine-private. ----
  HandlerMemory handler_memory;       // for the engine's post of the group
  size_t pending = 0;                 // io_uring: reads still in flight (io thread only)
  size_t next_request = 0;            // io_uring: the first request not yet issued
  ReadGroup* next_waiting = nullptr;  // io_uring: the next group waiting to be issued
};

// The number k >= 1 of requests r[0..k) that can be read as one: same open
// file, neither in memory nor whole-file nor direct, each starting where the
// previous one ends, both in the file and in memory. PrepareRead must have run.
size_t CoalescibleCount(ReadRequest* const* r, size_t n);

// Bytes from r[0]->read_offset that cover r[0..k).
uint64_t CoalescedLength(ReadRequest* const* r, size_t k);

// After `done` bytes of a merged read of r[0..k) landed from r[0]->read_offset:
// gives each request its share and finishes it (a short merged read truncates
// the requests it does not cover).
void FinishCoalesced(ReadRequest* const* r, size_t k, uint64_t done);

// Reads r[0..n) synchronously, merging what can be merged; a merged read that
// fails is retried request by request, so that an error names its own sample.
void ReadGroupBlocking(ReadRequest* const* r, size_t n);

// Bytes a read buffer needs for a sample of `length` stored bytes.
size_t ReadBufferCapacity(uint64_t length, bool whole_file, bool direct);

// Resets the results and computes read_offset and read_length.
void PrepareRead(ReadRequest* r);

// Whether the request can be answered without reading: already failed (the
// submitter set a status after PrepareRead), cancelled, or in memory. If so,
// completes it (status, stored) and returns true.
bool CompleteWithoutIo(ReadRequest* r);

// Opens r->path if r->file is null. On failure sets r->status and returns false.
bool OpenIfNeeded(ReadRequest* r);
// Whether r->file was opened for this read alone (OpenIfNeeded opened it).
bool OwnsFile(const ReadRequest& r);
// Closes a file OpenIfNeeded opened; r->file is null after.
void CloseOwnedFile(ReadRequest* r);

// Call after the reads: r->done bytes landed in buffer from read_offset. Sets
// status (DataLoss for a truncated or oversized sample) and stored.
void FinishRead(ReadRequest* r);

// DataLoss naming the file: `length` bytes were expected at `offset`, and only
// `available` are there before the end of the file.
Status TruncatedError(const std::string& path, uint64_t length, uint64_t offset,
                      uint64_t available);

// Whether a short read of r (r->file open) means end of file, so there is no
// need to ask again: O_DIRECT, or a file that says so. Only for reads of at
// most kMaxReadChunk bytes: Linux caps one read at MAX_RW_COUNT (2 GiB less a
// page), so a longer one returns short in the middle of a file.
bool ShortReadIsEof(const ReadRequest& r);

// The most bytes the engines ask of one read (ReadAt, pread, io_uring); longer
// ranges are read in pieces of this size. 1 GiB, a multiple of kDirectAlignment.
constexpr uint64_t kMaxReadChunk = uint64_t{1} << 30;

// Reads synchronously through RandomAccessFile::ReadAt (looping over short
// reads), then FinishRead. Never throws.
void ReadBlocking(ReadRequest* r);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_READ_REQUEST_H_
