//===- Shards.cpp - ga-train's state held in shards -----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "Shards.h"

#include "ga/Runtime/ga_step.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <array>

#include <cstring>

extern "C" {
// The CPU runtime's all-gather (lib/Runtime/Collectives.cpp).
void ga_all_gather_f32(int64_t, void *, int64_t, void *);
void ga_all_gather_f64(int64_t, void *, int64_t, void *);
}

namespace ga {

/// The descriptor of a vector of `n` elements at `data`, as the runtime's
/// collectives take it (allocated, aligned, offset, size, stride).
static std::array<int64_t, 5> vectorDescriptor(const void *data, int64_t n) {
  auto address = reinterpret_cast<int64_t>(data);
  return {address, address, 0, n, 1};
}

StateShards::StateShards(const TrainEntry &entry,
                         const StepSignature &signature,
                         const std::vector<std::vector<int64_t>> &sourceShapes)
    : whole(signature) {
  for (unsigned k = 0; k < entry.args.size() && k < sourceShapes.size(); ++k) {
    TrainArgKind kind = entry.args[k].kind;
    if (kind != TrainArgKind::Param && kind != TrainArgKind::FirstMoment &&
        kind != TrainArgKind::SecondMoment)
      continue;
    if (signature.inputs[k].shape == sourceShapes[k])
      continue;
    sharded.push_back(k);
    shardSizes.push_back(signature.inputs[k].numElements());
    whole.inputs[k].shape = sourceShapes[k];
    shardedParams |= kind == TrainArgKind::Param;
  }
}

std::vector<NpyArray> StateShards::gather(const std::vector<NpyArray> &args,
                                          std::string &error) const {
  std::vector<NpyArray> state = args;
  int64_t ranks = ga_world_size();
  for (unsigned k : sharded) {
    const NpyArray &shard = args[k];
    NpyArray &out = state[k];
    int64_t c = shard.numElements(), n = whole.inputs[k].numElements();
    size_t size = npyDTypeSize(shard.dtype);
    std::vector<char> all(ranks * c * size);
    auto in = vectorDescriptor(shard.data.data(), c);
    auto gathered = vectorDescriptor(all.data(), ranks * c);
    if (shard.dtype == NpyDType::F32)
      ga_all_gather_f32(1, in.data(), 1, gathered.data());
    else if (shard.dtype == NpyDType::F64)
      ga_all_gather_f64(1, in.data(), 1, gathered.data());
    else {
      error = "argument #" + std::to_string(k) + " is a shard of " +
              npyDTypeName(shard.dtype) +
              ": sharded parameters and moments are float32 or float64";
      return {};
    }
    if (ranks * c < n) {
      error = "argument #" + std::to_string(k) + ": " + std::to_string(ranks) +
              " shards of " + std::to_string(c) + " elements hold less than " +
              "the whole tensor's " + std::to_string(n);
      return {};
    }
    out.shape = whole.inputs[k].shape;
    out.data.assign(all.begin(), all.begin() + n * size);
  }
  return state;
}

void StateShards::barrier() {
  // An all-gather of one element per rank: no rank returns before every
  // rank has called it.
  int64_t ranks = ga_world_size();
  float mine = 0;
  std::vector<float> all(ranks);
  auto in = vectorDescriptor(&mine, 1);
  auto out = vectorDescriptor(all.data(), ranks);
  ga_all_gather_f32(1, in.data(), 1, out.data());
}

void StateShards::scatter(std::vector<NpyArray> &args) const {
  int64_t rank = ga_world_rank();
  for (auto [k, c] : llvm::zip(sharded, shardSizes)) {
    NpyArray &array = args[k];
    int64_t n = array.numElements();
    size_t size = npyDTypeSize(array.dtype);
    std::vector<char> part(c * size, 0);
    int64_t begin = std::min(n, rank * c), end = std::min(n, begin + c);
    std::memcpy(part.data(), array.data.data() + begin * size,
                (end - begin) * size);
    array.data = std::move(part);
    array.shape = {c};
  }
}

} // namespace ga
