// The last two lines of a profile: what the run showed, in a sentence a
// newcomer can act on, and what to try next. Derived from the verdict alone
// (profile/verdict.h), so that every figure in them is one the verdict tested.
#ifndef STOKE_SRC_PROFILE_CONCLUSION_H_
#define STOKE_SRC_PROFILE_CONCLUSION_H_

#include <string>

#include "profile/verdict.h"

namespace stoke::internal {

struct Conclusion {
  std::string learned;  // "in short": which part limits the pipeline, in samples/s
  std::string next;     // what to try: advice 1 and its gain, or the next question
};

Conclusion Conclude(const Verdict& verdict, const RunFacts& facts);

}  // namespace stoke::internal

#endif  // STOKE_SRC_PROFILE_CONCLUSION_H_
