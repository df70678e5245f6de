// stoke/stoke.h: everything public, in one include.
#ifndef STOKE_STOKE_H_
#define STOKE_STOKE_H_

#include "stoke/batch.h"
#include "stoke/dataset.h"
#include "stoke/device.h"
#include "stoke/file_system.h"
#include "stoke/image.h"
#include "stoke/launch.h"
#include "stoke/loader.h"
#include "stoke/options.h"
#include "stoke/shards.h"
#include "stoke/stats.h"
#include "stoke/status.h"
#include "stoke/storage_model.h"

#endif  // STOKE_STOKE_H_
