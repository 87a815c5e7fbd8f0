//===- Checkpoint.cpp - ga-train's checkpoints ----------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"

#include "../common/Tool.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace fs = llvm::sys::fs;

namespace ga {

/// The "format" of a checkpoint's manifest.
static constexpr const char *kCheckpointFormat = "ga-train checkpoint 1";

/// Writes `text` to `file` and flushes it to the disk.
static bool writeDurable(const std::string &file, const std::string &text,
                         std::string &error) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    error = "cannot write '" + file + "': " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      error = "cannot write '" + file + "': " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    done += n;
  }
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok)
    error = "cannot flush '" + file + "': " + std::strerror(errno);
  return ok;
}

static void syncPath(const std::string &file) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

static bool isState(TrainArgKind kind) {
  return kind == TrainArgKind::Param || kind == TrainArgKind::FirstMoment ||
         kind == TrainArgKind::SecondMoment;
}

static const char *roleToken(TrainArgKind kind) {
  switch (kind) {
  case TrainArgKind::Param:
    return "param";
  case TrainArgKind::FirstMoment:
    return "m";
  case TrainArgKind::SecondMoment:
    return "v";
  default:
    return "other";
  }
}

/// Writes `array` to `file` in the checkpoint and flushes it.
static bool writeStateFile(const std::string &file, const NpyArray &array,
                           std::string &error) {
  if (!writeNpy(file, array, error))
    return false;
  syncPath(file);
  return true;
}

/// The file of rank `rank`'s shard of argument `k` in a sharded checkpoint.
static std::string shardFile(unsigned k, int64_t rank) {
  return "arg" + std::to_string(k) + ".rank" + std::to_string(rank) + ".npy";
}

/// Every rank of a sharded checkpoint: its shards, as they are. Returns
/// "" or the reason.
static std::string writeShards(const std::string &temp,
                               const ShardedWrite &sharded,
                               const std::vector<NpyArray> &args) {
  for (unsigned k : sharded.sharded) {
    std::string file = temp + "/" + shardFile(k, sharded.rank);
    std::string error;
    if (!writeStateFile(file, args[k], error))
      return "rank " + std::to_string(sharded.rank) + ": " + error +
             " (the ranks of --checkpoint-shards write into one directory: "
             "they need a file system they share)";
  }
  return "";
}

std::string writeCheckpoint(const std::string &dir, int64_t step,
                            const TrainEntry &entry,
                            const StepSignature &signature,
                            const std::vector<NpyArray> &args,
                            const CheckpointInfo &info,
                            const ShardedWrite *sharded) {
  char stepName[32];
  std::snprintf(stepName, sizeof(stepName), "step-%08lld",
                static_cast<long long>(step));
  std::string name = stepName;
  std::string final = dir + "/" + name;
  // The ranks of a sharded checkpoint write into one directory: its name
  // is the same on every rank.
  std::string temp =
      dir + "/.tmp-" + name +
      (sharded ? std::string("-shards")
               : "-" + std::to_string(static_cast<long>(getpid())));
  bool writer = !sharded || sharded->rank == 0;
  std::string error;
  if (writer) {
    if (std::error_code ec = fs::create_directories(dir))
      error = "cannot create '" + dir + "': " + ec.message();
    fs::remove_directories(temp, /*IgnoreErrors=*/true);
    if (error.empty())
      if (std::error_code ec = fs::create_directory(temp))
        error = "cannot create '" + temp + "': " + ec.message();
  }
  if (sharded) {
    // Every rank writes its shards once the directory exists, then rank 0
    // the manifest once every shard is on the disk. A rank that fails
    // still meets the others at each barrier.
    sharded->barrier();
    if (error.empty() && fs::is_directory(temp))
      error = writeShards(temp, *sharded, args);
    else if (error.empty())
      error = "rank " + std::to_string(sharded->rank) + ": cannot see '" +
              temp +
              "' (the ranks of --checkpoint-shards write into one "
              "directory: they need a file system they share)";
    sharded->barrier();
    if (!writer)
      return error;
  }
  if (!error.empty())
    return error;
  auto isShard = [&](unsigned k) {
    return sharded && llvm::is_contained(sharded->sharded, k);
  };
  llvm::json::Array files;
  bool first = true;
  for (unsigned k = 0; k < entry.args.size(); ++k) {
    if (!isState(entry.args[k].kind))
      continue;
    std::string file = "arg" + std::to_string(k) + ".npy";
    if (!isShard(k) && !writeStateFile(temp + "/" + file, args[k], error))
      return error;
    if (first && info.crashAtStep && info.crashAtStep == step)
      ::_exit(86);
    first = false;
    const StepSignature &types = isShard(k) ? *sharded->whole : signature;
    llvm::json::Object record{{"argument", k},
                              {"role", roleToken(entry.args[k].kind)},
                              {"param", entry.args[k].index},
                              {"type", types.inputs[k].describe()}};
    if (isShard(k)) {
      llvm::json::Array parts;
      for (int64_t rank = 0; rank < sharded->ranks; ++rank)
        parts.push_back(shardFile(k, rank));
      record["shards"] = std::move(parts);
    } else {
      record["file"] = file;
    }
    // The parameter's name (train.name: a state_dict key from ga-import).
    if (const std::string &name = entry.names[entry.args[k].index];
        !name.empty())
      record["name"] = name;
    files.push_back(std::move(record));
  }
  llvm::json::Object manifest{{"format", kCheckpointFormat},
                              {"entry", signature.entry},
                              {"source", info.source},
                              {"step", step},
                              {"seed", static_cast<int64_t>(info.seed)},
                              {"state", std::move(files)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  os.flush();
  if (!writeDurable(temp + "/manifest.json", text, error))
    return error;
  syncPath(temp);
  fs::remove_directories(final, /*IgnoreErrors=*/true);
  if (std::error_code ec = fs::rename(temp, final))
    return "cannot rename '" + temp + "' to '" + final + "': " + ec.message();
  std::string latestTemp = dir + "/.latest.tmp";
  if (!writeDurable(latestTemp, name + "\n", error))
    return error;
  if (std::error_code ec = fs::rename(latestTemp, dir + "/latest"))
    return "cannot replace '" + dir + "/latest': " + ec.message();
  syncPath(dir);
  return "";
}

/// A tensor of `spec`'s shape from the ranks' shards `parts` (files in
/// `dir`, rank 0's first): their elements in order, of which the first n
/// are the tensor's (the rest pads the last shard).
static std::string readShards(const std::string &dir,
                              const llvm::json::Array &parts,
                              const TensorSpec &spec, NpyArray &array) {
  int64_t n = spec.numElements(), c = -1;
  array = NpyArray();
  array.dtype = spec.dtype;
  for (const llvm::json::Value &part : parts) {
    std::optional<llvm::StringRef> name = part.getAsString();
    if (!name)
      return "checkpoint '" + dir + "': \"shards\" lists file names";
    std::string file = dir + "/" + name->str(), error;
    NpyArray shard;
    if (!readNpy(file, shard, error))
      return error;
    if (shard.dtype != spec.dtype || shard.shape.size() != 1 ||
        (c >= 0 && shard.shape[0] != c))
      return "checkpoint '" + dir + "': shard '" + name->str() + "' is " +
             npyDTypeName(shard.dtype) + " " + shard.shapeString() +
             ", not one of the ranks' equal " + npyDTypeName(spec.dtype) +
             " vectors of a tensor of " + spec.describe();
    c = shard.shape[0];
    array.data.insert(array.data.end(), shard.data.begin(), shard.data.end());
  }
  int64_t held = c < 0 ? 0 : c * static_cast<int64_t>(parts.size());
  if (held < n)
    return "checkpoint '" + dir + "': " + std::to_string(parts.size()) +
           " shard(s) of " + std::to_string(std::max<int64_t>(c, 0)) +
           " elements hold less than the " + std::to_string(n) + " of " +
           spec.describe();
  array.data.resize(n * npyDTypeSize(spec.dtype));
  array.shape = spec.shape;
  return "";
}

std::string readCheckpoint(const std::string &where, const TrainEntry &entry,
                           const StepSignature &signature,
                           std::vector<NpyArray> &args, int64_t &step) {
  std::string dir = where, error;
  if (fs::exists(where + "/latest")) {
    std::string name = tool::readText(where + "/latest", error);
    if (!error.empty())
      return error;
    while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
      name.pop_back();
    dir = where + "/" + name;
  }
  std::string manifestFile = dir + "/manifest.json";
  std::string text = tool::readText(manifestFile, error);
  if (!error.empty())
    return error + " (--resume names a --checkpoint-dir or a step directory)";
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return "'" + manifestFile +
           "' is not JSON: " + llvm::toString(json.takeError());
  const llvm::json::Object *object = json->getAsObject();
  std::optional<llvm::StringRef> format =
      object ? object->getString("format") : std::nullopt;
  if (!format || *format != kCheckpointFormat)
    return "'" + manifestFile + "' is not a ga-train checkpoint (format \"" +
           (format ? format->str() : std::string("?")) + "\")";
  std::optional<int64_t> at = object->getInteger("step");
  const llvm::json::Array *files = object->getArray("state");
  if (!at || *at < 0 || !files)
    return "'" + manifestFile + "' lacks \"step\" or \"state\"";
  std::string entryName = object->getString("entry").value_or("?").str();
  std::vector<bool> seen(entry.args.size(), false);
  for (const llvm::json::Value &item : *files) {
    const llvm::json::Object *file = item.getAsObject();
    std::optional<int64_t> k =
        file ? file->getInteger("argument") : std::nullopt;
    std::optional<llvm::StringRef> name =
        file ? file->getString("file") : std::nullopt;
    const llvm::json::Array *parts = file ? file->getArray("shards") : nullptr;
    if (!k || (!name && !parts))
      return "'" + manifestFile +
             "': every \"state\" entry needs \"argument\" and \"file\" "
             "(or \"shards\")";
    if (*k < 0 || *k >= static_cast<int64_t>(entry.args.size()) ||
        !isState(entry.args[*k].kind))
      return "checkpoint '" + dir + "' (of @" + entryName +
             ") holds argument #" + std::to_string(*k) +
             ", which is no "
             "parameter or moment of @" +
             signature.entry + ": a checkpoint of another model";
    const TensorSpec &spec = signature.inputs[*k];
    NpyArray array;
    if (parts) {
      if (std::string shardError = readShards(dir, *parts, spec, array);
          !shardError.empty())
        return shardError;
    } else if (!readNpy(dir + "/" + name->str(), array, error)) {
      return error;
    }
    if (array.dtype != spec.dtype || array.shape != spec.shape)
      return "checkpoint '" + dir + "' (of @" + entryName +
             ") holds argument #" + std::to_string(*k) + " as " +
             npyDTypeName(array.dtype) + " " + array.shapeString() + ", but @" +
             signature.entry + " takes " + spec.describe() +
             ": a checkpoint of another model";
    args[*k] = std::move(array);
    seen[*k] = true;
  }
  for (unsigned k = 0; k < entry.args.size(); ++k)
    if (isState(entry.args[k].kind) && !seen[k])
      return "checkpoint '" + dir + "' (of @" + entryName +
             ") has no value for argument #" + std::to_string(k) + " (a " +
             TrainEntry::name(entry.args[k].kind) + ") of @" + signature.entry +
             ": a checkpoint of another model";
  step = *at;
  return "";
}

} // namespace ga
