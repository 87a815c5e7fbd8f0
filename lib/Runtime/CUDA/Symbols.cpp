//===- Symbols.cpp - Libraries opened with dlopen -------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "Symbols.h"

#include <cstdlib>

namespace ga::cuda {

std::string SymbolBinder::missingNames() const {
  std::string names;
  for (size_t i = 0; i < missing.size(); ++i)
    names += (i == 0                    ? ""
              : i + 1 == missing.size() ? " and "
                                        : ", ") +
             missing[i];
  return names;
}

void *openFirst(const std::vector<std::string> &candidates,
                std::string *error) {
  for (const std::string &candidate : candidates) {
    if (void *library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
      return library;
    if (const char *message = dlerror(); message && error)
      *error = message;
  }
  return nullptr;
}

std::vector<std::string> toolkitCandidates(const char *env, const char *stem) {
  std::vector<std::string> candidates;
  if (const char *path = env ? std::getenv(env) : nullptr)
    candidates.push_back(path);
  const char *home = std::getenv("CUDA_HOME");
  for (const char *version : {".so.13", ".so.12"}) {
    std::string name = std::string(stem) + version;
    candidates.push_back(name);
    if (home && *home)
      candidates.push_back(std::string(home) + "/lib64/" + name);
    candidates.push_back("/usr/local/cuda/lib64/" + name);
  }
  return candidates;
}

} // namespace ga::cuda
