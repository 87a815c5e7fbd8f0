//===- Collectives.cpp - ga-run's data-parallel runtime -------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"

#include "ga/Runtime/Errors.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#if defined(__SANITIZE_ADDRESS__)
#define GA_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GA_LEAK_CHECK 1
#endif
#endif
#ifndef GA_LEAK_CHECK
#define GA_LEAK_CHECK 0
#endif
#if GA_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
/// Open MPI's own allocations (made inside MPI calls) are not leaks of
/// ga-run's: LeakSanitizer ignores what is allocated in this scope.
#define GA_MPI_ALLOCATIONS_NOT_LEAKS __lsan::ScopedDisabler lsanDisabler
#else
#define GA_MPI_ALLOCATIONS_NOT_LEAKS
#endif

#include <climits>
#include <cstdint>
#include <cstdlib>

#ifdef GA_HAVE_MPI
// The C API only (mpi.h would pull in the deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

using llvm::Twine;

namespace {
int gRank = 0;
int gSize = 1;
bool gJoined = false;

[[noreturn]] void die(const Twine &message) {
  llvm::errs() << "ga-run: error: rank " << gRank << ": " << message << "\n";
  llvm::errs().flush();
#ifdef GA_HAVE_MPI
  if (gJoined)
    MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::exit(1);
}

/// The elements of the contiguous buffer that `descriptor` (a ranked memref
/// descriptor of rank `rank`) describes.
template <typename T>
T *contiguousData(int64_t rank, void *descriptor, int64_t &count) {
  auto *fields = static_cast<int64_t *>(descriptor);
  T *aligned = reinterpret_cast<T *>(fields[1]);
  int64_t offset = fields[2];
  const int64_t *sizes = fields + 3, *strides = fields + 3 + rank;
  count = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != count)
      die("train.all_reduce got a strided buffer; the runtime reduces "
          "contiguous ones");
    count *= sizes[d];
  }
  if (count > INT_MAX)
    die("train.all_reduce of " + Twine(count) +
        " elements: MPI counts are limited to 2^31 - 1");
  return aligned + offset;
}

#ifdef GA_HAVE_MPI
template <typename T> MPI_Datatype mpiType();
template <> MPI_Datatype mpiType<float>() { return MPI_FLOAT; }
template <> MPI_Datatype mpiType<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype mpiType<int32_t>() { return MPI_INT32_T; }
template <> MPI_Datatype mpiType<int64_t>() { return MPI_INT64_T; }
#endif

/// kind 0: sum; kind 1: sum divided by the number of ranks.
template <typename T>
void allReduce(int64_t rank, void *descriptor, int32_t kind) {
  int64_t count;
  T *data = contiguousData<T>(rank, descriptor, count);
  if (gSize == 1)
    return;
#ifdef GA_HAVE_MPI
  GA_MPI_ALLOCATIONS_NOT_LEAKS;
  int rc = MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count),
                         mpiType<T>(), MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    die("MPI_Allreduce failed with code " + Twine(rc));
#endif
  if (kind == 1)
    for (int64_t i = 0; i < count; ++i)
      data[i] /= static_cast<T>(gSize);
}
} // namespace

extern "C" {
int64_t ga_rank() { return gRank; }
void ga_all_reduce_f32(int64_t rank, void *descriptor, int32_t kind) {
  allReduce<float>(rank, descriptor, kind);
}
void ga_all_reduce_f64(int64_t rank, void *descriptor, int32_t kind) {
  allReduce<double>(rank, descriptor, kind);
}
void ga_all_reduce_i32(int64_t rank, void *descriptor, int32_t kind) {
  allReduce<int32_t>(rank, descriptor, kind);
}
void ga_all_reduce_i64(int64_t rank, void *descriptor, int32_t kind) {
  allReduce<int64_t>(rank, descriptor, kind);
}
}

bool ga_run::launchedByMPI() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

llvm::Error ga_run::startCollectives(int64_t ranks, llvm::StringRef program) {
  bool launched = launchedByMPI();
  if (ranks > 1 && !launched)
    return llvm::createStringError(
        "@" + program + " runs on " + Twine(ranks) +
        " data-parallel ranks (train.data_parallel = " + Twine(ranks) +
        "): launch it with `mpirun -np " + Twine(ranks) + " ga-run ...`");
  if (!launched)
    return llvm::Error::success();
#ifdef GA_HAVE_MPI
  GA_MPI_ALLOCATIONS_NOT_LEAKS;
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
    return llvm::createStringError("MPI_Init failed");
  gJoined = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
  MPI_Comm_size(MPI_COMM_WORLD, &gSize);
  if (gSize != ranks && ranks == 1)
    return llvm::createStringError(
        "@" + program +
        " runs on one rank (its train.step has no "
        "data_parallel), but mpirun started " +
        Twine(gSize) +
        ": run it without mpirun, or recompile it with data_parallel = " +
        Twine(gSize));
  if (gSize != ranks)
    return llvm::createStringError(
        "@" + program + " runs on " + Twine(ranks) +
        " data-parallel ranks (train.data_parallel = " + Twine(ranks) +
        "), but mpirun started " + Twine(gSize) +
        ": launch it with "
        "`mpirun -np " +
        Twine(ranks) + " ga-run ...`");
  return llvm::Error::success();
#else
  return llvm::createStringError(
      "this ga-run was built without MPI (no MPI found at configure time), "
      "so it cannot run under mpirun or on several ranks");
#endif
}

int ga_run::worldRank() { return gRank; }
int ga_run::worldSize() { return gSize; }

void ga_run::stopCollectives() {
#ifdef GA_HAVE_MPI
  if (gJoined) {
#if GA_LEAK_CHECK
    // MPI_Finalize unloads Open MPI's components, after which LeakSanitizer
    // can no longer name (nor suppress, test/sanitizers/lsan.supp) the
    // allocations they made: check for leaks while they are loaded.
    __lsan_do_leak_check();
#endif
    GA_MPI_ALLOCATIONS_NOT_LEAKS;
    MPI_Finalize();
  }
  gJoined = false;
#endif
}

llvm::orc::SymbolMap
ga_run::runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char *name, void *address) {
    symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                               llvm::JITSymbolFlags::Exported};
  };
  add("ga_rank", reinterpret_cast<void *>(&ga_rank));
  add("ga_all_reduce_f32", reinterpret_cast<void *>(&ga_all_reduce_f32));
  add("ga_all_reduce_f64", reinterpret_cast<void *>(&ga_all_reduce_f64));
  add("ga_all_reduce_i32", reinterpret_cast<void *>(&ga_all_reduce_i32));
  add("ga_all_reduce_i64", reinterpret_cast<void *>(&ga_all_reduce_i64));
  add("ga_report_error", reinterpret_cast<void *>(&ga_report_error));
  return symbols;
}
