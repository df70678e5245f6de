#include "stoke/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace stoke {
namespace {

TEST(StatusTest, OkIsCheapAndEmpty) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrnoMapsToCodesAndKeepsContext) {
  Status s = ErrnoToStatus(ENOENT, "/data/x.idx");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/data/x.idx"), std::string::npos);
  EXPECT_EQ(ErrnoToStatus(EIO, "f").code(), StatusCode::kUnavailable);
  EXPECT_EQ(ErrnoToStatus(ENOMEM, "f").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.WithContext("epoch 1").message().rfind("epoch 1: /data/x.idx", 0), 0u);
}

TEST(StatusTest, StatusOrCarriesValueOrError) {
  StatusOr<int> v = 7;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 7);
  StatusOr<int> e = DataLossError("bad");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

TEST(StatusDeathTest, ValueOfAnErrorAbortsWithItsMessageInEveryBuild) {
  // It was an assert: a release build read a missing value (undefined
  // behaviour) instead of saying what went wrong.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StatusOr<int> error = NotFoundError("/data/x.stk: no such file");
  EXPECT_DEATH((void)error.value(), "StatusOr::value\\(\\) of an error: NotFound: /data/x.stk");
  StatusOr<std::string> text = DataLossError("bad");
  EXPECT_DEATH((void)text->size(), "of an error: DataLoss: bad");
}

}  // namespace
}  // namespace stoke
