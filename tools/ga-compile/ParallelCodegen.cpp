//===- ParallelCodegen.cpp - ga-compile's object code on several threads --===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// A step's module is one large function (the step, which calls the kernels)
// and many small ones (the kernels, shared by every layer, and their OpenMP
// bodies). LLVM optimizes and compiles one function at a time, so whole
// functions can be spread over threads: the module is partitioned by
// instruction count, each partition is written as bitcode, read back into
// its own LLVMContext and optimized and compiled there.
//
//===----------------------------------------------------------------------===//

#include "ParallelCodegen.h"

#include "mlir/ExecutionEngine/OptUtils.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <mutex>
#include <thread>

using namespace llvm;

namespace {

/// LLVM's default pipeline at `optLevel` for the step's partition: without
/// the vectorizers and loop unrolling. The step is a straight line of
/// descriptor stores and calls; the SLP vectorizer's spill-cost walk is
/// quadratic in a block that long (on GPT-2 124M's CUDA host code, 288,674
/// lines of LLVM IR in one block, it took over 3 minutes at -O1) and finds
/// nothing worth a vector there.
Error optimizeStep(Module &module, unsigned optLevel, TargetMachine *machine) {
  if (optLevel == 0)
    return mlir::makeOptimizingTransformer(0, 0, machine)(&module);
  PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder builder(machine, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  OptimizationLevel level = optLevel == 1   ? OptimizationLevel::O1
                            : optLevel == 2 ? OptimizationLevel::O2
                                            : OptimizationLevel::O3;
  builder.buildPerModuleDefaultPipeline(level).run(module, mam);
  return Error::success();
}

/// Optimizes the bitcode `bitcode` at `optLevel` (`step`: the step's
/// partition, see optimizeStep) and compiles it at `codegenLevel`, in a
/// fresh context.
Expected<std::string>
compilePartition(StringRef bitcode, unsigned optLevel, unsigned codegenLevel,
                 bool step, const ga::TargetMachineFactory &factory) {
  LLVMContext context;
  Expected<std::unique_ptr<Module>> module =
      parseBitcodeFile(MemoryBufferRef(bitcode, "partition"), context);
  if (!module)
    return module.takeError();
  std::unique_ptr<TargetMachine> machine = factory();
  if (!machine)
    return createStringError("cannot create an LLVM target machine");
  machine->setOptLevel(static_cast<CodeGenOptLevel>(codegenLevel));
  if (step) {
    if (Error err = optimizeStep(**module, optLevel, machine.get()))
      return std::move(err);
  } else {
    auto transformer =
        mlir::makeOptimizingTransformer(optLevel, 0, machine.get());
    if (Error err = transformer(module->get()))
      return std::move(err);
  }
  SmallString<0> object;
  raw_svector_ostream stream(object);
  legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, stream, nullptr,
                                   CodeGenFileType::ObjectFile))
    return createStringError("LLVM cannot emit an object file for " +
                             machine->getTargetTriple().str());
  codegen.run(**module);
  return std::string(object.str());
}

/// What one partition calls in another must be a global symbol: hidden,
/// so that the library does not export it, and dso_local. Mutable or
/// address-significant local variables go to partition 0 as such symbols;
/// local constants are copied where they are used.
void exposeAcrossPartitions(
    Module &module, ArrayRef<Function *> functions,
    DenseMap<const GlobalValue *, unsigned> &partitionOf) {
  auto hideGlobally = [](GlobalValue &value) {
    if (!value.hasLocalLinkage())
      return;
    value.setLinkage(GlobalValue::ExternalLinkage);
    value.setVisibility(GlobalValue::HiddenVisibility);
    value.setDSOLocal(true);
  };
  for (Function *f : functions)
    hideGlobally(*f);
  for (GlobalVariable &g : module.globals()) {
    if (g.isDeclaration() || (g.hasLocalLinkage() && g.isConstant()))
      continue;
    partitionOf[&g] = 0;
    hideGlobally(g);
  }
}

} // namespace

Expected<std::vector<std::string>>
ga::compileInPartitions(std::unique_ptr<Module> module, unsigned jobs,
                        unsigned optLevel,
                        const TargetMachineFactory &factory) {
  // The functions with bodies. Kernels (ga_kernel_*, and the OpenMP bodies
  // LLVM outlined from them) hold the arithmetic and get `optLevel`; the
  // rest (the step: allocations, descriptors and kernel calls, one straight
  // line that grows with the model) gets partition 0 to itself, optimized
  // at -O1, where LLVM's full pipeline would cost more than it gains, and
  // compiled at -O0 (FastISel, the fast register allocator): the optimizing
  // code generator took 5 of the 9 s of a 24-layer GPT's compile on that
  // one block and made the step no faster.
  auto isKernel = [](Function *f) {
    return f->getName().starts_with("ga_kernel_");
  };
  std::vector<Function *> functions, kernels;
  for (Function &f : *module)
    if (!f.isDeclaration()) {
      functions.push_back(&f);
      if (isKernel(&f))
        kernels.push_back(&f);
    }
  auto size = [](Function *f) { return f->getInstructionCount(); };
  std::stable_sort(kernels.begin(), kernels.end(),
                   [&](Function *a, Function *b) { return size(a) > size(b); });
  DenseMap<const GlobalValue *, unsigned> partitionOf;
  bool hasSteps = kernels.size() < functions.size();
  for (Function *f : functions)
    if (!isKernel(f))
      partitionOf[f] = 0;
  unsigned first = hasSteps && !kernels.empty() && jobs > 1 ? 1 : 0;
  unsigned parts =
      std::max(first + 1, std::min<unsigned>(jobs, first + kernels.size()));
  std::vector<uint64_t> load(parts, 0);
  for (Function *f : kernels) {
    unsigned lightest =
        std::min_element(load.begin() + first, load.end()) - load.begin();
    partitionOf[f] = lightest;
    load[lightest] += size(f) + 1;
  }
  jobs = parts;
  std::vector<unsigned> levels(jobs, optLevel), codegenLevels(jobs, optLevel);
  bool stepAlone = hasSteps && (first == 1 || kernels.empty());
  // Partition 0 holds only the step when the kernels have partitions of
  // their own or when there are none (target=cuda: the kernels are device
  // code, the host module is the step alone: 288,674 lines of LLVM IR for
  // GPT-2 124M, over which the optimizer's SLP vectorizer took minutes).
  if (stepAlone) {
    levels[0] = std::min(optLevel, 1u);
    codegenLevels[0] = 0;
  }

  exposeAcrossPartitions(*module, functions, partitionOf);

  std::vector<std::string> bitcodes(jobs);
  for (unsigned p = 0; p < jobs; ++p) {
    ValueToValueMapTy map;
    std::unique_ptr<Module> part =
        CloneModule(*module, map, [&](const GlobalValue *value) {
          auto *g = dyn_cast<GlobalVariable>(value);
          if (g && g->hasLocalLinkage() && g->isConstant())
            return true;
          auto it = partitionOf.find(value);
          return it != partitionOf.end() && it->second == p;
        });
    raw_string_ostream os(bitcodes[p]);
    WriteBitcodeToFile(*part, os);
  }
  module.reset();

  std::vector<std::string> objects(jobs);
  std::vector<std::string> errors(jobs);
  std::vector<std::thread> threads;
  for (unsigned p = 0; p < jobs; ++p)
    threads.emplace_back([&, p] {
      Expected<std::string> object =
          compilePartition(bitcodes[p], levels[p], codegenLevels[p],
                           stepAlone && p == 0, factory);
      if (object)
        objects[p] = std::move(*object);
      else
        errors[p] = toString(object.takeError());
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &error : errors)
    if (!error.empty())
      return createStringError(error);
  return objects;
}
