// stoke/file_system.h: the storage layer, in the spirit of leveldb's Env.
//
// Every byte stoke reads goes through a FileSystem, so tests and users can inject
// their own: an in-memory one, one that fails on demand, one that models a slow
// disk. DefaultFileSystem() is POSIX (open/pread), optionally with O_DIRECT.
//
// Thread safety: a FileSystem must be safe to call from many threads at once; a
// RandomAccessFile's ReadAt must be safe to call concurrently (pread semantics).
//
//   auto file = stoke::DefaultFileSystem()->Open("/data/x.bin", {});
//   if (!file.ok()) return file.status();
//   auto n = (*file)->ReadAt(4096, buffer);  // bytes read, 0 at end of file
#ifndef STOKE_FILE_SYSTEM_H_
#define STOKE_FILE_SYSTEM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoke/span.h"
#include "stoke/status.h"

namespace stoke {

struct FileOptions {
  // Bypass the page cache (O_DIRECT). Reads must then be aligned to
  // kDirectAlignment in offset, length and buffer address; the loader does that.
  bool direct = false;
};

// Offsets, lengths and buffers of O_DIRECT reads are multiples of this.
inline constexpr size_t kDirectAlignment = 4096;

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;

  // Reads up to dst.size() bytes at `offset` into dst. Returns the number of bytes
  // read: fewer than asked is allowed (a short read; callers loop), 0 means end of
  // file. Blocks. On failure the Status names the file and the offset.
  virtual StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) = 0;

  // The file's size in bytes.
  virtual StatusOr<uint64_t> Size() = 0;

  // The path it was opened with, for messages.
  virtual const std::string& name() const = 0;

  // A POSIX descriptor that reads the same bytes, or -1. The io_uring engine
  // submits reads on it directly; a file that returns -1 (a fake, a fault
  // injector) is read through ReadAt instead, so its behaviour is honoured.
  virtual int native_handle() const { return -1; }

  // Whether a read that returns fewer bytes than asked (and more than 0) always
  // means it reached the end of the file. True for POSIX files: Linux fills a
  // pread of a regular file of up to MAX_RW_COUNT (2 GiB less a page) unless it
  // reaches the end; stoke asks at most 1 GiB of one read. Then a whole-file
  // read takes one call, not two. Default false: readers ask again until a read
  // returns 0, which is right for anything that may return short reads early.
  virtual bool short_read_means_eof() const { return false; }
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Opens `path` for reading. NotFound if it does not exist; the Status names it.
  virtual StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path,
                                                           const FileOptions& options) = 0;

  // Opens `path` for a read that closes it again soon (the loader's file per
  // sample: image folders, lists), reusing the object *file holds where the
  // file system can; `path` must outlive the open file. The default file
  // system reuses its own, so these opens allocate nothing once warm. The
  // default implementation is Open.
  virtual Status OpenReusing(const std::string& path, const FileOptions& options,
                             std::unique_ptr<RandomAccessFile>* file);
  // Closes a file OpenReusing opened, keeping the object for the next one
  // where the file system can. The default destroys it.
  virtual void CloseReusing(std::unique_ptr<RandomAccessFile>* file) { file->reset(); }

  // Reads the whole file (used for small metadata such as list files and labels).
  // Allocates. Fails with ResourceExhausted beyond `max_bytes`.
  StatusOr<std::vector<std::byte>> ReadAll(const std::string& path, uint64_t max_bytes);
};

// The POSIX file system (open, pread, O_DIRECT). Never null; lives forever.
FileSystem* DefaultFileSystem();

}  // namespace stoke

#endif  // STOKE_FILE_SYSTEM_H_
