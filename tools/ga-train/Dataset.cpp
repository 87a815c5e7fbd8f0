//===- Dataset.cpp - ga-train's token dataset -----------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "Dataset.h"

#include "../common/Tool.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstring>

namespace ga {

std::string loadDataset(const std::string &dir, const TrainEntry &entry,
                        const StepSignature &signature, Dataset &out) {
  std::string manifest = dir + "/dataset.json", error;
  std::string text = tool::readText(manifest, error);
  if (!error.empty())
    return error + " (--data names a directory with dataset.json)";
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return "'" + manifest +
           "' is not JSON: " + llvm::toString(json.takeError());
  const llvm::json::Object *object = json->getAsObject();
  const llvm::json::Array *names =
      object ? object->getArray("arrays") : nullptr;
  if (!names)
    return "'" + manifest +
           "' must be an object with \"arrays\": a list of .npy file names";
  if (names->size() != entry.numBatch)
    return "'" + manifest + "' names " + std::to_string(names->size()) +
           " array(s), but the train.step of @" + signature.entry + " takes " +
           std::to_string(entry.numBatch) + " batch operand(s)";
  for (unsigned j = 0; j < entry.numBatch; ++j) {
    std::optional<llvm::StringRef> name = (*names)[j].getAsString();
    if (!name)
      return "'" + manifest + "': \"arrays\"[" + std::to_string(j) +
             "] must be a file name";
    std::string file = dir + "/" + name->str();
    NpyArray array;
    if (!readNpy(file, array, error))
      return "batch operand #" + std::to_string(j) + ": " + error;
    const TensorSpec &spec = signature.inputs[entry.batchArg[j]];
    std::vector<int64_t> rowShape(spec.shape.begin() + 1, spec.shape.end());
    bool shapeOk =
        array.shape.size() == spec.shape.size() &&
        std::equal(rowShape.begin(), rowShape.end(), array.shape.begin() + 1);
    if (array.dtype != spec.dtype || !shapeOk) {
      std::vector<int64_t> expected = spec.shape;
      expected[0] = -1;
      std::string rows = npyShapeString(expected);
      rows.replace(rows.find("-1"), 2, "N");
      return "batch operand #" + std::to_string(j) + " ('" + file +
             "'): expected rows of " + spec.describe() + ", that is " +
             npyDTypeName(spec.dtype) + " " + rows + ", got " +
             npyDTypeName(array.dtype) + " " + array.shapeString();
    }
    if (j && array.shape[0] != out.rows)
      return "batch operand #" + std::to_string(j) + " ('" + file + "') has " +
             std::to_string(array.shape[0]) + " rows, but '" + out.files[0] +
             "' has " + std::to_string(out.rows);
    if (array.shape[0] < spec.shape[0])
      return "'" + file + "' has " + std::to_string(array.shape[0]) +
             " rows, fewer than the global batch of @" + signature.entry +
             " (" + std::to_string(spec.shape[0]) + ")";
    out.rows = array.shape[0];
    out.files.push_back(file);
    out.arrays.push_back(std::move(array));
  }
  return "";
}

void fillBatch(const Dataset &data, const TrainEntry &entry, int64_t step,
               std::vector<NpyArray> &args) {
  int64_t batchRows = args[entry.batchArg[0]].shape[0];
  for (unsigned j = 0; j < entry.numBatch; ++j) {
    NpyArray &dst = args[entry.batchArg[j]];
    const NpyArray &src = data.arrays[j];
    size_t rowBytes = dst.data.size() / batchRows;
    for (int64_t i = 0; i < batchRows; ++i) {
      int64_t row = ((step - 1) * batchRows + i) % data.rows;
      std::memcpy(dst.data.data() + i * rowBytes,
                  src.data.data() + row * rowBytes, rowBytes);
    }
  }
}

} // namespace ga
