// stoke/span.h: stoke::Span<T>, a pointer and a count: the view of contiguous
// elements that stoke's interfaces take and return (Batch::labels, Dataset::Decode,
// RandomAccessFile::ReadAt).
//
// stoke's own type rather than std::span so that its public headers compile in a
// C++17 project (libtorch trainers, nvcc -std=c++17); the library itself is C++20.
// It is made from a pointer and a count or from any contiguous container
// (std::vector, std::array, std::string, std::span); under C++20 it is a
// contiguous, borrowed range, so a std::span is made from it implicitly:
//
//   std::span<const int64_t> labels = batch.labels();
//   std::vector<int64_t> copy(batch.labels().begin(), batch.labels().end());
#ifndef STOKE_SPAN_H_
#define STOKE_SPAN_H_

#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>

#if __cplusplus >= 202002L
// For std::ranges::enable_borrowed_range, which <span> specialises for its own
// type (so declares); <ranges> would cost every including unit 0.4 s more.
#include <span>
#endif

namespace stoke {

template <typename T>
class Span {
  // Containers whose data() points at elements usable as T (T, or T's
  // non-const form for a Span of const T).
  template <typename C>
  using DataOf = std::remove_pointer_t<decltype(std::data(std::declval<C&>()))>;
  template <typename C>
  static constexpr bool kFrom = std::is_convertible_v<DataOf<C> (*)[], T (*)[]>;

 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = size_t;
  using pointer = T*;
  using reference = T&;
  using iterator = T*;

  constexpr Span() noexcept = default;
  constexpr Span(T* data, size_t size) noexcept : data_(data), size_(size) {}
  template <typename C, typename = std::enable_if_t<
                            !std::is_same_v<std::remove_cv_t<std::remove_reference_t<C>>, Span> &&
                            kFrom<std::remove_reference_t<C>>>>
  constexpr Span(C&& container) noexcept  // NOLINT: implicit, as std::span's
      : data_(std::data(container)), size_(std::size(container)) {}

  constexpr T* data() const noexcept { return data_; }
  constexpr size_t size() const noexcept { return size_; }
  constexpr size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }
  constexpr T& operator[](size_t i) const noexcept { return data_[i]; }
  constexpr T& front() const noexcept { return data_[0]; }
  constexpr T& back() const noexcept { return data_[size_ - 1]; }
  constexpr Span first(size_t n) const noexcept { return {data_, n}; }
  constexpr Span last(size_t n) const noexcept { return {data_ + size_ - n, n}; }
  // `n` elements from `offset`; all the rest when `n` is left out.
  constexpr Span subspan(size_t offset, size_t n = static_cast<size_t>(-1)) const noexcept {
    return {data_ + offset, n == static_cast<size_t>(-1) ? size_ - offset : n};
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace stoke

#if __cplusplus >= 202002L
// A Span does not own its elements: a std::span may be made from a temporary one.
template <typename T>
inline constexpr bool std::ranges::enable_borrowed_range<stoke::Span<T>> = true;
#endif

#endif  // STOKE_SPAN_H_
