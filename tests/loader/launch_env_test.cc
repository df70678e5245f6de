// RankFromEnvironment: torchrun's variables first, then Open MPI's, PMI's and
// Slurm's; bad values are named.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "stoke/launch.h"

namespace stoke {
namespace {

// Clears every launcher variable for the test and restores none (ctest runs
// each test in its own process).
class LaunchEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                             "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) {
      unsetenv(name);
    }
  }
};

TEST_F(LaunchEnvTest, NoLauncherLeavesTheOptions) {
  LoaderOptions o;
  o.rank = 1;
  o.world_size = 3;
  ASSERT_TRUE(RankFromEnvironment(&o).ok());
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.world_size, 3);
}

TEST_F(LaunchEnvTest, TorchrunComesBeforeOpenMpiAndOpenMpiBeforeSlurm) {
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "8", 1);
  LoaderOptions o;
  ASSERT_TRUE(RankFromEnvironment(&o).ok());
  EXPECT_EQ(o.rank, 5);
  EXPECT_EQ(o.world_size, 8);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ASSERT_TRUE(RankFromEnvironment(&o).ok());
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.world_size, 2);
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  ASSERT_TRUE(RankFromEnvironment(&o).ok());
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
}

TEST_F(LaunchEnvTest, BadValuesAreNamed) {
  LoaderOptions o;
  setenv("RANK", "two", 1);
  setenv("WORLD_SIZE", "4", 1);
  Status s = RankFromEnvironment(&o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("RANK='two' is not a whole number"), std::string::npos) << s;
  setenv("RANK", "4", 1);
  s = RankFromEnvironment(&o);
  EXPECT_NE(s.message().find("RANK=4 is not a rank of WORLD_SIZE=4"), std::string::npos) << s;
  unsetenv("WORLD_SIZE");
  s = RankFromEnvironment(&o);
  EXPECT_NE(s.message().find("RANK is set but WORLD_SIZE is not"), std::string::npos) << s;
  EXPECT_EQ(o.rank, 0);  // untouched by the failures
  EXPECT_EQ(o.world_size, 1);
}

}  // namespace
}  // namespace stoke
