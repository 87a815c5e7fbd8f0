// A defect of Debian's MLIR 22.1.8, found by ga-fuzz, not of ga-opt: the
// named linalg op parser reads an uninitialized attribute dictionary when
// the op name is followed by `<`. Stock mlir-opt shows it too:
//   valgrind mlir-opt linalg-named-op-angle.mlir
//   -> Conditional jump or move depends on uninitialised value(s)
//      ... mlir::NamedAttrList::NamedAttrList(mlir::DictionaryAttr)
//      ... mlir::linalg::FillOp::parse
// In an AddressSanitizer build it aborts ("SmallVector unable to grow").
// ga-fuzz skips inputs of this shape; this file is not a lit test.
func.func @f() {
  linalg.fill<f32>
}
