// `stoke train PATH`: trains a model (stoke/train.h) on a dataset through a
// loader, printing per epoch what Keras's fit prints, and the test accuracy.
#ifndef STOKE_TOOLS_STOKE_TRAIN_H_
#define STOKE_TOOLS_STOKE_TRAIN_H_

#include <cstdio>
#include <string>
#include <vector>

namespace stoke::cli {

// Returns the process exit status: 0 success, 1 data or I/O error, 2 usage error.
int TrainCommand(const std::vector<std::string>& args);
void PrintTrainUsage(FILE* out);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_TRAIN_H_
