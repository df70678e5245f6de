// stoke::Span: made from containers and pointers, sliced, and turned into a
// std::span (C++20 callers) without a copy.
#include "stoke/span.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace stoke {
namespace {

TEST(SpanTest, ViewsContainersAndSlicesThem) {
  std::vector<int64_t> v = {1, 2, 3, 4, 5};
  Span<int64_t> all = v;
  EXPECT_EQ(all.data(), v.data());
  EXPECT_EQ(all.size(), 5u);
  EXPECT_EQ(all.size_bytes(), 40u);
  all[0] = 10;  // a view: writes reach the vector
  EXPECT_EQ(v[0], 10);
  Span<const int64_t> middle = all.subspan(1, 3);
  EXPECT_EQ(middle.data(), v.data() + 1);
  EXPECT_EQ(middle.size(), 3u);
  EXPECT_EQ(all.subspan(2).size(), 3u);
  EXPECT_EQ(all.first(2).back(), 2);
  EXPECT_EQ(all.last(2).front(), 4);
  int64_t sum = 0;
  for (int64_t x : middle) sum += x;
  EXPECT_EQ(sum, 9);
  EXPECT_TRUE(Span<int>().empty());
  const std::array<int, 3> a = {7, 8, 9};
  EXPECT_EQ(Span<const int>(a).back(), 9);
}

TEST(SpanTest, ConstIsKept) {
  // A view of const elements is not a view of mutable ones, as with std::span.
  static_assert(std::is_convertible_v<std::vector<int>&, Span<const int>>);
  static_assert(std::is_convertible_v<Span<int>, Span<const int>>);
  static_assert(!std::is_convertible_v<const std::vector<int>&, Span<int>>);
  static_assert(!std::is_convertible_v<Span<const int>, Span<int>>);
  static_assert(!std::is_convertible_v<std::vector<int64_t>&, Span<int>>);
  SUCCEED();
}

TEST(SpanTest, BecomesAStdSpanAndComesFromOne) {
  std::vector<std::byte> bytes(16);
  std::span<std::byte> std_view = bytes;
  Span<std::byte> view = std_view;
  EXPECT_EQ(view.data(), bytes.data());
  EXPECT_EQ(view.size(), 16u);
  // From a temporary Span too (a borrowed range): a slice handed to code
  // that takes std::span.
  std::span<std::byte> back = view.subspan(4, 8);
  EXPECT_EQ(back.data(), bytes.data() + 4);
  EXPECT_EQ(back.size(), 8u);
  std::span<const std::byte> read_only = view;
  EXPECT_EQ(read_only.size(), 16u);
}

}  // namespace
}  // namespace stoke
