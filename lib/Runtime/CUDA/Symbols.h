//===- Symbols.h - Tables of the functions of libraries opened with dlopen
//-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The CUDA runtime opens the driver, cuBLAS, cuBLASLt and NCCL with dlopen,
// so that it builds without CUDA and loads where there is none. Each
// library's functions are one list, `LIST(X)` with one
// `X(name, required, function type)` per function, from which
// GA_SYMBOL_TABLE makes a struct with a field per function and a `bind`
// that looks every one up; the names of the required ones that are missing
// come back for the error message. Adding a function is one line in its
// list.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_RUNTIME_CUDA_SYMBOLS_H
#define GA_LIB_RUNTIME_CUDA_SYMBOLS_H

#include <dlfcn.h>
#include <string>
#include <vector>

// Internal to libga_cuda_runtime: not exported.
#pragma GCC visibility push(hidden)
namespace ga::cuda {

/// A type spelled as written (`Id<int (*)(void *)> f;`), for declarations
/// made by macros.
template <typename T> using Id = T;

/// Looks the functions of a table up in one library.
class SymbolBinder {
public:
  explicit SymbolBinder(void *library) : library(library) {}

  template <typename F>
  void operator()(const char *name, F &field, bool required) {
    field = reinterpret_cast<F>(dlsym(library, name));
    if (!field && required)
      missing.push_back(name);
  }

  /// The required functions not found, as "a, b and c"; empty when none.
  std::string missingNames() const;

private:
  void *library;
  std::vector<std::string> missing;
};

/// The first of `candidates` that dlopen loads (RTLD_NOW | RTLD_LOCAL), or
/// nullptr, with dlerror's last message in `error` when given.
void *openFirst(const std::vector<std::string> &candidates,
                std::string *error = nullptr);

/// Where a library of the CUDA toolkit is looked for: `$env` when set, then
/// `stem.so.13` and `stem.so.12`, each on the loader's path, in
/// `$CUDA_HOME/lib64` and in `/usr/local/cuda/lib64`.
std::vector<std::string> toolkitCandidates(const char *env, const char *stem);

} // namespace ga::cuda
#pragma GCC visibility pop

#define GA_SYMBOL_FIELD(name, required, ...)                                   \
  ::ga::cuda::Id<__VA_ARGS__> name = nullptr;
#define GA_SYMBOL_BIND(name, required, ...) binder(#name, name, required);

/// struct TABLE { one field per function of LIST; bind(binder) }.
#define GA_SYMBOL_TABLE(TABLE, LIST)                                           \
  struct TABLE {                                                               \
    LIST(GA_SYMBOL_FIELD)                                                      \
    /* Looks every function up; returns the required ones missing. */          \
    std::string bind(void *library) {                                          \
      ::ga::cuda::SymbolBinder binder(library);                                \
      LIST(GA_SYMBOL_BIND)                                                     \
      return binder.missingNames();                                            \
    }                                                                          \
  };

#endif // GA_LIB_RUNTIME_CUDA_SYMBOLS_H
