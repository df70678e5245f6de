// stoke/launch.h: the rank a launcher gave this process, for the loader's
// sharding (LoaderOptions::rank and world_size), when the trainer does not take
// it from its own communicator.
//
//   stoke::LoaderOptions options;
//   if (stoke::Status s = stoke::RankFromEnvironment(&options); !s.ok()) return s;
//   auto loader = stoke::Loader::Open(dataset, options);  // this rank's shard
#ifndef STOKE_LAUNCH_H_
#define STOKE_LAUNCH_H_

#include "stoke/options.h"
#include "stoke/status.h"

namespace stoke {

// Sets options->rank and world_size from the launcher's environment: torchrun's
// RANK and WORLD_SIZE, else Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, else
// PMI_RANK and PMI_SIZE (MPICH), else Slurm's SLURM_PROCID and SLURM_NTASKS.
// Leaves them as they are when none is set. InvalidArgument naming the
// variable when one is not a number, only one of a pair is set, or the rank is
// not below the size.
Status RankFromEnvironment(LoaderOptions* options);

}  // namespace stoke

#endif  // STOKE_LAUNCH_H_
