// A step of ga-import (torch-mlir 20261001, torch 2.15.0), without ga-legalize-import:
// transformers' GPT2LMHeadModel (V 256, S 32, D 64, 2 layers, eager attention), B 4;
// the raw forms of torch-mlir's linalg that ga-legalize-import takes. Read by
// exported-steps.test.
// difftest-floats: normal 0.05
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map8 = affine_map<(d0, d1, d2, d3) -> ()>
#map9 = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>
#map10 = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
#map11 = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
#map12 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map13 = affine_map<(d0, d1, d2) -> (d2)>
#map14 = affine_map<(d0, d1) -> (d1)>
#map15 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#map16 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
module {
  func.func @step(%arg0: tensor<256x64xf32>, %arg1: tensor<32x64xf32>, %arg2: tensor<64xf32>, %arg3: tensor<64xf32>, %arg4: tensor<64x192xf32>, %arg5: tensor<192xf32>, %arg6: tensor<64x64xf32>, %arg7: tensor<64xf32>, %arg8: tensor<64xf32>, %arg9: tensor<64xf32>, %arg10: tensor<64x256xf32>, %arg11: tensor<256xf32>, %arg12: tensor<256x64xf32>, %arg13: tensor<64xf32>, %arg14: tensor<64xf32>, %arg15: tensor<64xf32>, %arg16: tensor<64x192xf32>, %arg17: tensor<192xf32>, %arg18: tensor<64x64xf32>, %arg19: tensor<64xf32>, %arg20: tensor<64xf32>, %arg21: tensor<64xf32>, %arg22: tensor<64x256xf32>, %arg23: tensor<256xf32>, %arg24: tensor<256x64xf32>, %arg25: tensor<64xf32>, %arg26: tensor<64xf32>, %arg27: tensor<64xf32>, %arg28: tensor<4x32xi64>, %arg29: tensor<4x32xi64>, %arg30: tensor<4x32xi64>) -> (tensor<f32>, tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
    %loss, %grads:28 = train.step params(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13, %arg14, %arg15, %arg16, %arg17, %arg18, %arg19, %arg20, %arg21, %arg22, %arg23, %arg24, %arg25, %arg26, %arg27 : tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) batch(%arg28, %arg29, %arg30 : tensor<4x32xi64>, tensor<4x32xi64>, tensor<4x32xi64>) -> tensor<f32> grads(tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
    ^bb0(%arg31: tensor<256x64xf32>, %arg32: tensor<32x64xf32>, %arg33: tensor<64xf32>, %arg34: tensor<64xf32>, %arg35: tensor<64x192xf32>, %arg36: tensor<192xf32>, %arg37: tensor<64x64xf32>, %arg38: tensor<64xf32>, %arg39: tensor<64xf32>, %arg40: tensor<64xf32>, %arg41: tensor<64x256xf32>, %arg42: tensor<256xf32>, %arg43: tensor<256x64xf32>, %arg44: tensor<64xf32>, %arg45: tensor<64xf32>, %arg46: tensor<64xf32>, %arg47: tensor<64x192xf32>, %arg48: tensor<192xf32>, %arg49: tensor<64x64xf32>, %arg50: tensor<64xf32>, %arg51: tensor<64xf32>, %arg52: tensor<64xf32>, %arg53: tensor<64x256xf32>, %arg54: tensor<256xf32>, %arg55: tensor<256x64xf32>, %arg56: tensor<64xf32>, %arg57: tensor<64xf32>, %arg58: tensor<64xf32>, %arg59: tensor<4x32xi64>, %arg60: tensor<4x32xi64>, %arg61: tensor<4x32xi64>):
      %c3_i64 = arith.constant 3 : i64
      %c4_i64 = arith.constant 4 : i64
      %c0_i64 = arith.constant 0 : i64
      %c32_i64 = arith.constant 32 : i64
      %c32 = arith.constant 32 : index
      %c256 = arith.constant 256 : index
      %cst = arith.constant 0.000000e+00 : f64
      %cst_0 = arith.constant 0.000000e+00 : f32
      %cst_1 = arith.constant 0xFF800000 : f32
      %cst_2 = arith.constant dense<-3.40282347E+38> : tensor<f32>
      %cst_3 = arith.constant dense<0.000000e+00> : tensor<f32>
      %cst_4 = arith.constant dense<true> : tensor<i1>
      %cst_5 = arith.constant 0.79788456080286541 : f64
      %cst_6 = arith.constant 4.471500e-02 : f64
      %cst_7 = arith.constant 1.000000e-05 : f64
      %cst_8 = arith.constant 6.400000e+01 : f64
      %cst_9 = arith.constant 6.400000e+01 : f32
      %cst_10 = arith.constant 2.500000e-01 : f32
      %cst_11 = arith.constant 5.000000e-01 : f32
      %cst_12 = arith.constant 1.000000e+00 : f32
      %0 = tensor.empty() : tensor<4x32x64xf32>
      %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg59 : tensor<4x32xi64>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: i64, %out: f32):
        %190 = arith.index_cast %in : i64 to index
        %191 = linalg.index 2 : index
        %192 = arith.cmpi slt, %190, %c256 : index
        cf.assert %192, "index must be smaller than dim size"
        %193 = arith.cmpi sge, %in, %c0_i64 : i64
        cf.assert %193, "index must be larger or equal to 0"
        %extracted = tensor.extract %arg31[%190, %191] : tensor<256x64xf32>
        linalg.yield %extracted : f32
      } -> tensor<4x32x64xf32>
      %2 = tensor.empty() : tensor<32xi64>
      %3 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel"]} outs(%2 : tensor<32xi64>) {
      ^bb0(%out: i64):
        %190 = linalg.index 0 : index
        %191 = arith.index_cast %190 : index to i64
        linalg.yield %191 : i64
      } -> tensor<32xi64>
      %expanded = tensor.expand_shape %3 [[0, 1]] output_shape [1, 32] : tensor<32xi64> into tensor<1x32xi64>
      %4 = tensor.empty() : tensor<1x32x64xf32>
      %5 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x32xi64>) outs(%4 : tensor<1x32x64xf32>) {
      ^bb0(%in: i64, %out: f32):
        %190 = arith.index_cast %in : i64 to index
        %191 = linalg.index 2 : index
        %192 = arith.cmpi slt, %190, %c32 : index
        cf.assert %192, "index must be smaller than dim size"
        %193 = arith.cmpi sge, %in, %c0_i64 : i64
        cf.assert %193, "index must be larger or equal to 0"
        %extracted = tensor.extract %arg32[%190, %191] : tensor<32x64xf32>
        linalg.yield %extracted : f32
      } -> tensor<1x32x64xf32>
      %6 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<4x32x64xf32>, tensor<1x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %7 = tensor.empty() : tensor<4x32xi1>
      %8 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg60 : tensor<4x32xi64>) outs(%7 : tensor<4x32xi1>) {
      ^bb0(%in: i64, %out: i1):
        %190 = arith.cmpi ne, %in, %c0_i64 : i64
        linalg.yield %190 : i1
      } -> tensor<4x32xi1>
      %9 = tensor.empty() : tensor<4xi64>
      %10 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel"]} outs(%9 : tensor<4xi64>) {
      ^bb0(%out: i64):
        %190 = linalg.index 0 : index
        %191 = arith.index_cast %190 : index to i64
        linalg.yield %191 : i64
      } -> tensor<4xi64>
      %expanded_13 = tensor.expand_shape %10 [[0, 1, 2, 3]] output_shape [4, 1, 1, 1] : tensor<4xi64> into tensor<4x1x1x1xi64>
      %expanded_14 = tensor.expand_shape %3 [[0, 1, 2, 3]] output_shape [1, 1, 32, 1] : tensor<32xi64> into tensor<1x1x32x1xi64>
      %expanded_15 = tensor.expand_shape %3 [[0, 1, 2, 3]] output_shape [1, 1, 1, 32] : tensor<32xi64> into tensor<1x1x1x32xi64>
      %11 = tensor.empty() : tensor<1x1x32x32xi1>
      %12 = linalg.generic {indexing_maps = [#map5, #map6, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_15, %expanded_14 : tensor<1x1x1x32xi64>, tensor<1x1x32x1xi64>) outs(%11 : tensor<1x1x32x32xi1>) {
      ^bb0(%in: i64, %in_67: i64, %out: i1):
        %190 = arith.cmpi sle, %in, %in_67 : i64
        linalg.yield %190 : i1
      } -> tensor<1x1x32x32xi1>
      %13 = linalg.generic {indexing_maps = [#map8, #map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_4, %12 : tensor<i1>, tensor<1x1x32x32xi1>) outs(%11 : tensor<1x1x32x32xi1>) {
      ^bb0(%in: i1, %in_67: i1, %out: i1):
        %190 = arith.andi %in, %in_67 : i1
        linalg.yield %190 : i1
      } -> tensor<1x1x32x32xi1>
      %14 = tensor.empty() : tensor<4x1x1x32xi1>
      %15 = linalg.generic {indexing_maps = [#map9, #map10, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_13, %expanded_15 : tensor<4x1x1x1xi64>, tensor<1x1x1x32xi64>) outs(%14 : tensor<4x1x1x32xi1>) {
      ^bb0(%in: i64, %in_67: i64, %out: i1):
        %190 = arith.cmpi slt, %in, %c0_i64 : i64
        %191 = arith.addi %in, %c4_i64 : i64
        %192 = arith.select %190, %191, %in : i64
        %193 = arith.index_cast %192 : i64 to index
        %194 = arith.cmpi slt, %in_67, %c0_i64 : i64
        %195 = arith.addi %in_67, %c32_i64 : i64
        %196 = arith.select %194, %195, %in_67 : i64
        %197 = arith.index_cast %196 : i64 to index
        %extracted = tensor.extract %8[%193, %197] : tensor<4x32xi1>
        linalg.yield %extracted : i1
      } -> tensor<4x1x1x32xi1>
      %16 = tensor.empty() : tensor<4x1x32x32xi1>
      %17 = linalg.generic {indexing_maps = [#map11, #map5, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13, %15 : tensor<1x1x32x32xi1>, tensor<4x1x1x32xi1>) outs(%16 : tensor<4x1x32x32xi1>) {
      ^bb0(%in: i1, %in_67: i1, %out: i1):
        %190 = arith.andi %in, %in_67 : i1
        linalg.yield %190 : i1
      } -> tensor<4x1x32x32xi1>
      %18 = tensor.empty() : tensor<4x1x32x32xf32>
      %19 = linalg.generic {indexing_maps = [#map7, #map8, #map8, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17, %cst_3, %cst_2 : tensor<4x1x32x32xi1>, tensor<f32>, tensor<f32>) outs(%18 : tensor<4x1x32x32xf32>) {
      ^bb0(%in: i1, %in_67: f32, %in_68: f32, %out: f32):
        %190 = arith.select %in, %in_67, %in_68 : f32
        linalg.yield %190 : f32
      } -> tensor<4x1x32x32xf32>
      %20 = tensor.empty() : tensor<4x32x64xf64>
      %21 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6 : tensor<4x32x64xf32>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %190 = arith.extf %in : f32 to f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %22 = tensor.empty() : tensor<4x32x1xf64>
      %23 = linalg.fill ins(%cst : f64) outs(%22 : tensor<4x32x1xf64>) -> tensor<4x32x1xf64>
      %24 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%21 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %25 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%24 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %26 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%21, %25 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.subf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %27 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%26, %26 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.mulf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %28 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%27 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %29 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%28 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %30 = tensor.empty() : tensor<4x32x1xf32>
      %31 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%29 : tensor<4x32x1xf64>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %190 = arith.truncf %in : f64 to f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %32 = linalg.fill ins(%cst_0 : f32) outs(%30 : tensor<4x32x1xf32>) -> tensor<4x32x1xf32>
      %33 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%6 : tensor<4x32x64xf32>) outs(%32 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %out : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %34 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%33 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.divf %in, %cst_9 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %35 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%31 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_7 : f64 to f32
        %191 = arith.addf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x1xf32>
      %36 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%35 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.rsqrt %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %37 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %34 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.subf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %38 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%37, %36 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %39 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%38, %arg33 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %40 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%39, %arg34 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %collapsed = tensor.collapse_shape %40 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %41 = tensor.empty() : tensor<128x192xf32>
      %42 = linalg.fill ins(%cst_0 : f32) outs(%41 : tensor<128x192xf32>) -> tensor<128x192xf32>
      %43 = linalg.matmul ins(%collapsed, %arg35 : tensor<128x64xf32>, tensor<64x192xf32>) outs(%42 : tensor<128x192xf32>) -> tensor<128x192xf32>
      %44 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg36 : tensor<192xf32>) outs(%41 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x192xf32>
      %45 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%43, %44 : tensor<128x192xf32>, tensor<128x192xf32>) outs(%41 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x192xf32>
      %expanded_16 = tensor.expand_shape %45 [[0, 1], [2]] output_shape [4, 32, 192] : tensor<128x192xf32> into tensor<4x32x192xf32>
      %extracted_slice = tensor.extract_slice %expanded_16[0, 0, 0] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_17 = tensor.extract_slice %expanded_16[0, 0, 64] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_18 = tensor.extract_slice %expanded_16[0, 0, 128] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %expanded_19 = tensor.expand_shape %extracted_slice_17 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %expanded_20 = tensor.expand_shape %extracted_slice_18 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %46 = tensor.empty() : tensor<4x4x32x16xf32>
      %transposed = linalg.transpose ins(%expanded_20 : tensor<4x32x4x16xf32>) outs(%46 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %expanded_21 = tensor.expand_shape %extracted_slice [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %transposed_22 = linalg.transpose ins(%expanded_21 : tensor<4x32x4x16xf32>) outs(%46 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %47 = tensor.empty() : tensor<4x4x16x32xf32>
      %transposed_23 = linalg.transpose ins(%expanded_19 : tensor<4x32x4x16xf32>) outs(%47 : tensor<4x4x16x32xf32>) permutation = [0, 2, 3, 1] 
      %collapsed_24 = tensor.collapse_shape %transposed_22 [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %collapsed_25 = tensor.collapse_shape %transposed_23 [[0, 1], [2], [3]] : tensor<4x4x16x32xf32> into tensor<16x16x32xf32>
      %48 = tensor.empty() : tensor<16x32x32xf32>
      %49 = linalg.fill ins(%cst_0 : f32) outs(%48 : tensor<16x32x32xf32>) -> tensor<16x32x32xf32>
      %50 = linalg.batch_matmul ins(%collapsed_24, %collapsed_25 : tensor<16x32x16xf32>, tensor<16x16x32xf32>) outs(%49 : tensor<16x32x32xf32>) -> tensor<16x32x32xf32>
      %expanded_26 = tensor.expand_shape %50 [[0, 1], [2], [3]] output_shape [4, 4, 32, 32] : tensor<16x32x32xf32> into tensor<4x4x32x32xf32>
      %51 = tensor.empty() : tensor<4x4x32x32xf32>
      %52 = linalg.generic {indexing_maps = [#map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_26 : tensor<4x4x32x32xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.mulf %in, %cst_10 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %53 = linalg.generic {indexing_maps = [#map7, #map15, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%52, %19 : tensor<4x4x32x32xf32>, tensor<4x1x32x32xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %54 = tensor.empty() : tensor<4x4x32xi64>
      %55 = linalg.fill ins(%c0_i64 : i64) outs(%54 : tensor<4x4x32xi64>) -> tensor<4x4x32xi64>
      %56 = tensor.empty() : tensor<4x4x32xf32>
      %57 = linalg.fill ins(%cst_1 : f32) outs(%56 : tensor<4x4x32xf32>) -> tensor<4x4x32xf32>
      %58:2 = linalg.generic {indexing_maps = [#map7, #map16, #map16], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%53 : tensor<4x4x32x32xf32>) outs(%57, %55 : tensor<4x4x32xf32>, tensor<4x4x32xi64>) {
      ^bb0(%in: f32, %out: f32, %out_67: i64):
        %190 = linalg.index 3 : index
        %191 = arith.index_cast %190 : index to i64
        %192 = arith.maximumf %in, %out : f32
        %193 = arith.cmpf ogt, %in, %out : f32
        %194 = arith.select %193, %191, %out_67 : i64
        linalg.yield %192, %194 : f32, i64
      } -> (tensor<4x4x32xf32>, tensor<4x4x32xi64>)
      %expanded_27 = tensor.expand_shape %58#0 [[0], [1], [2, 3]] output_shape [4, 4, 32, 1] : tensor<4x4x32xf32> into tensor<4x4x32x1xf32>
      %59 = linalg.generic {indexing_maps = [#map7, #map6, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%53, %expanded_27 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.subf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %60 = linalg.generic {indexing_maps = [#map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%59 : tensor<4x4x32x32xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.exp %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %61 = tensor.empty() : tensor<4x4x32x1xf32>
      %62 = linalg.fill ins(%cst_0 : f32) outs(%61 : tensor<4x4x32x1xf32>) -> tensor<4x4x32x1xf32>
      %63 = linalg.generic {indexing_maps = [#map7, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%60 : tensor<4x4x32x32xf32>) outs(%62 : tensor<4x4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %out : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x1xf32>
      %64 = linalg.generic {indexing_maps = [#map7, #map6, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%60, %63 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.divf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %collapsed_28 = tensor.collapse_shape %64 [[0, 1], [2], [3]] : tensor<4x4x32x32xf32> into tensor<16x32x32xf32>
      %collapsed_29 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %65 = tensor.empty() : tensor<16x32x16xf32>
      %66 = linalg.fill ins(%cst_0 : f32) outs(%65 : tensor<16x32x16xf32>) -> tensor<16x32x16xf32>
      %67 = linalg.batch_matmul ins(%collapsed_28, %collapsed_29 : tensor<16x32x32xf32>, tensor<16x32x16xf32>) outs(%66 : tensor<16x32x16xf32>) -> tensor<16x32x16xf32>
      %expanded_30 = tensor.expand_shape %67 [[0, 1], [2], [3]] output_shape [4, 4, 32, 16] : tensor<16x32x16xf32> into tensor<4x4x32x16xf32>
      %68 = tensor.empty() : tensor<4x32x4x16xf32>
      %transposed_31 = linalg.transpose ins(%expanded_30 : tensor<4x4x32x16xf32>) outs(%68 : tensor<4x32x4x16xf32>) permutation = [0, 2, 1, 3] 
      %collapsed_32 = tensor.collapse_shape %transposed_31 [[0, 1], [2, 3]] : tensor<4x32x4x16xf32> into tensor<128x64xf32>
      %69 = tensor.empty() : tensor<128x64xf32>
      %70 = linalg.fill ins(%cst_0 : f32) outs(%69 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %71 = linalg.matmul ins(%collapsed_32, %arg37 : tensor<128x64xf32>, tensor<64x64xf32>) outs(%70 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %72 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg38 : tensor<64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x64xf32>
      %73 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%71, %72 : tensor<128x64xf32>, tensor<128x64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x64xf32>
      %expanded_33 = tensor.expand_shape %73 [[0, 1], [2]] output_shape [4, 32, 64] : tensor<128x64xf32> into tensor<4x32x64xf32>
      %74 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_33, %6 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %75 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%74 : tensor<4x32x64xf32>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %190 = arith.extf %in : f32 to f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %76 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%75 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %77 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%76 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %78 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%75, %77 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.subf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %79 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%78, %78 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.mulf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %80 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%79 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %81 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%80 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %82 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%81 : tensor<4x32x1xf64>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %190 = arith.truncf %in : f64 to f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %83 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%74 : tensor<4x32x64xf32>) outs(%32 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %out : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %84 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%83 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.divf %in, %cst_9 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %85 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%82 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_7 : f64 to f32
        %191 = arith.addf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x1xf32>
      %86 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%85 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.rsqrt %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %87 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%74, %84 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.subf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %88 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%87, %86 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %89 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%88, %arg39 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %90 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%89, %arg40 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %collapsed_34 = tensor.collapse_shape %90 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %91 = tensor.empty() : tensor<128x256xf32>
      %92 = linalg.fill ins(%cst_0 : f32) outs(%91 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %93 = linalg.matmul ins(%collapsed_34, %arg41 : tensor<128x64xf32>, tensor<64x256xf32>) outs(%92 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %94 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg42 : tensor<256xf32>) outs(%91 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x256xf32>
      %95 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%93, %94 : tensor<128x256xf32>, tensor<128x256xf32>) outs(%91 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x256xf32>
      %expanded_35 = tensor.expand_shape %95 [[0, 1], [2]] output_shape [4, 32, 256] : tensor<128x256xf32> into tensor<4x32x256xf32>
      %96 = tensor.empty() : tensor<4x32x256xf32>
      %97 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_35 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.mulf %in, %cst_11 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %98 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_35 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.fpowi %in, %c3_i64 : f32, i64
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %99 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%98 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_6 : f64 to f32
        %191 = arith.mulf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x256xf32>
      %100 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_35, %99 : tensor<4x32x256xf32>, tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %101 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%100 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_5 : f64 to f32
        %191 = arith.mulf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x256xf32>
      %102 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%101 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.tanh %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %103 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%102 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %cst_12 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %104 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%97, %103 : tensor<4x32x256xf32>, tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %collapsed_36 = tensor.collapse_shape %104 [[0, 1], [2]] : tensor<4x32x256xf32> into tensor<128x256xf32>
      %105 = linalg.matmul ins(%collapsed_36, %arg43 : tensor<128x256xf32>, tensor<256x64xf32>) outs(%70 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %106 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg44 : tensor<64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x64xf32>
      %107 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%105, %106 : tensor<128x64xf32>, tensor<128x64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x64xf32>
      %expanded_37 = tensor.expand_shape %107 [[0, 1], [2]] output_shape [4, 32, 64] : tensor<128x64xf32> into tensor<4x32x64xf32>
      %108 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%74, %expanded_37 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %109 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108 : tensor<4x32x64xf32>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %190 = arith.extf %in : f32 to f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %110 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%109 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %111 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%110 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %112 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%109, %111 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.subf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %113 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%112, %112 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.mulf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %114 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%113 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %115 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%114 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %116 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%115 : tensor<4x32x1xf64>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %190 = arith.truncf %in : f64 to f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %117 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%108 : tensor<4x32x64xf32>) outs(%32 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %out : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %118 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%117 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.divf %in, %cst_9 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %119 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%116 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_7 : f64 to f32
        %191 = arith.addf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x1xf32>
      %120 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%119 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.rsqrt %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %121 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108, %118 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.subf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %122 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%121, %120 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %123 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%122, %arg45 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %124 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%123, %arg46 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %collapsed_38 = tensor.collapse_shape %124 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %125 = linalg.matmul ins(%collapsed_38, %arg47 : tensor<128x64xf32>, tensor<64x192xf32>) outs(%42 : tensor<128x192xf32>) -> tensor<128x192xf32>
      %126 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg48 : tensor<192xf32>) outs(%41 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x192xf32>
      %127 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%125, %126 : tensor<128x192xf32>, tensor<128x192xf32>) outs(%41 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x192xf32>
      %expanded_39 = tensor.expand_shape %127 [[0, 1], [2]] output_shape [4, 32, 192] : tensor<128x192xf32> into tensor<4x32x192xf32>
      %extracted_slice_40 = tensor.extract_slice %expanded_39[0, 0, 0] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_41 = tensor.extract_slice %expanded_39[0, 0, 64] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_42 = tensor.extract_slice %expanded_39[0, 0, 128] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %expanded_43 = tensor.expand_shape %extracted_slice_41 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %expanded_44 = tensor.expand_shape %extracted_slice_42 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %transposed_45 = linalg.transpose ins(%expanded_44 : tensor<4x32x4x16xf32>) outs(%46 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %expanded_46 = tensor.expand_shape %extracted_slice_40 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %transposed_47 = linalg.transpose ins(%expanded_46 : tensor<4x32x4x16xf32>) outs(%46 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %transposed_48 = linalg.transpose ins(%expanded_43 : tensor<4x32x4x16xf32>) outs(%47 : tensor<4x4x16x32xf32>) permutation = [0, 2, 3, 1] 
      %collapsed_49 = tensor.collapse_shape %transposed_47 [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %collapsed_50 = tensor.collapse_shape %transposed_48 [[0, 1], [2], [3]] : tensor<4x4x16x32xf32> into tensor<16x16x32xf32>
      %128 = linalg.batch_matmul ins(%collapsed_49, %collapsed_50 : tensor<16x32x16xf32>, tensor<16x16x32xf32>) outs(%49 : tensor<16x32x32xf32>) -> tensor<16x32x32xf32>
      %expanded_51 = tensor.expand_shape %128 [[0, 1], [2], [3]] output_shape [4, 4, 32, 32] : tensor<16x32x32xf32> into tensor<4x4x32x32xf32>
      %129 = linalg.generic {indexing_maps = [#map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_51 : tensor<4x4x32x32xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.mulf %in, %cst_10 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %130 = linalg.generic {indexing_maps = [#map7, #map15, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%129, %19 : tensor<4x4x32x32xf32>, tensor<4x1x32x32xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %131:2 = linalg.generic {indexing_maps = [#map7, #map16, #map16], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%130 : tensor<4x4x32x32xf32>) outs(%57, %55 : tensor<4x4x32xf32>, tensor<4x4x32xi64>) {
      ^bb0(%in: f32, %out: f32, %out_67: i64):
        %190 = linalg.index 3 : index
        %191 = arith.index_cast %190 : index to i64
        %192 = arith.maximumf %in, %out : f32
        %193 = arith.cmpf ogt, %in, %out : f32
        %194 = arith.select %193, %191, %out_67 : i64
        linalg.yield %192, %194 : f32, i64
      } -> (tensor<4x4x32xf32>, tensor<4x4x32xi64>)
      %expanded_52 = tensor.expand_shape %131#0 [[0], [1], [2, 3]] output_shape [4, 4, 32, 1] : tensor<4x4x32xf32> into tensor<4x4x32x1xf32>
      %132 = linalg.generic {indexing_maps = [#map7, #map6, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%130, %expanded_52 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.subf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %133 = linalg.generic {indexing_maps = [#map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%132 : tensor<4x4x32x32xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.exp %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %134 = linalg.generic {indexing_maps = [#map7, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%133 : tensor<4x4x32x32xf32>) outs(%62 : tensor<4x4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %out : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x1xf32>
      %135 = linalg.generic {indexing_maps = [#map7, #map6, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%133, %134 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%51 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.divf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x4x32x32xf32>
      %collapsed_53 = tensor.collapse_shape %135 [[0, 1], [2], [3]] : tensor<4x4x32x32xf32> into tensor<16x32x32xf32>
      %collapsed_54 = tensor.collapse_shape %transposed_45 [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %136 = linalg.batch_matmul ins(%collapsed_53, %collapsed_54 : tensor<16x32x32xf32>, tensor<16x32x16xf32>) outs(%66 : tensor<16x32x16xf32>) -> tensor<16x32x16xf32>
      %expanded_55 = tensor.expand_shape %136 [[0, 1], [2], [3]] output_shape [4, 4, 32, 16] : tensor<16x32x16xf32> into tensor<4x4x32x16xf32>
      %transposed_56 = linalg.transpose ins(%expanded_55 : tensor<4x4x32x16xf32>) outs(%68 : tensor<4x32x4x16xf32>) permutation = [0, 2, 1, 3] 
      %collapsed_57 = tensor.collapse_shape %transposed_56 [[0, 1], [2, 3]] : tensor<4x32x4x16xf32> into tensor<128x64xf32>
      %137 = linalg.matmul ins(%collapsed_57, %arg49 : tensor<128x64xf32>, tensor<64x64xf32>) outs(%70 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %138 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg50 : tensor<64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x64xf32>
      %139 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%137, %138 : tensor<128x64xf32>, tensor<128x64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x64xf32>
      %expanded_58 = tensor.expand_shape %139 [[0, 1], [2]] output_shape [4, 32, 64] : tensor<128x64xf32> into tensor<4x32x64xf32>
      %140 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_58, %108 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %141 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%140 : tensor<4x32x64xf32>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %190 = arith.extf %in : f32 to f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %142 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%141 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %143 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%142 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %144 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%141, %143 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.subf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %145 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%144, %144 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.mulf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %146 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%145 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %147 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%146 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %148 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%147 : tensor<4x32x1xf64>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %190 = arith.truncf %in : f64 to f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %149 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%140 : tensor<4x32x64xf32>) outs(%32 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %out : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %150 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%149 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.divf %in, %cst_9 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %151 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%148 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_7 : f64 to f32
        %191 = arith.addf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x1xf32>
      %152 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%151 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.rsqrt %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %153 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%140, %150 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.subf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %154 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%153, %152 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %155 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%154, %arg51 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %156 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%155, %arg52 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %collapsed_59 = tensor.collapse_shape %156 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %157 = linalg.matmul ins(%collapsed_59, %arg53 : tensor<128x64xf32>, tensor<64x256xf32>) outs(%92 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %158 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg54 : tensor<256xf32>) outs(%91 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x256xf32>
      %159 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%157, %158 : tensor<128x256xf32>, tensor<128x256xf32>) outs(%91 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x256xf32>
      %expanded_60 = tensor.expand_shape %159 [[0, 1], [2]] output_shape [4, 32, 256] : tensor<128x256xf32> into tensor<4x32x256xf32>
      %160 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_60 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.mulf %in, %cst_11 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %161 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_60 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.fpowi %in, %c3_i64 : f32, i64
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %162 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%161 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_6 : f64 to f32
        %191 = arith.mulf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x256xf32>
      %163 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_60, %162 : tensor<4x32x256xf32>, tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %164 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%163 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_5 : f64 to f32
        %191 = arith.mulf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x256xf32>
      %165 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%164 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.tanh %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %166 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%165 : tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %cst_12 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %167 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%160, %166 : tensor<4x32x256xf32>, tensor<4x32x256xf32>) outs(%96 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %collapsed_61 = tensor.collapse_shape %167 [[0, 1], [2]] : tensor<4x32x256xf32> into tensor<128x256xf32>
      %168 = linalg.matmul ins(%collapsed_61, %arg55 : tensor<128x256xf32>, tensor<256x64xf32>) outs(%70 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %169 = linalg.generic {indexing_maps = [#map14, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg56 : tensor<64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x64xf32>
      %170 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%168, %169 : tensor<128x64xf32>, tensor<128x64xf32>) outs(%69 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<128x64xf32>
      %expanded_62 = tensor.expand_shape %170 [[0, 1], [2]] output_shape [4, 32, 64] : tensor<128x64xf32> into tensor<4x32x64xf32>
      %171 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%140, %expanded_62 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %172 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%171 : tensor<4x32x64xf32>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %190 = arith.extf %in : f32 to f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %173 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%172 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %174 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%173 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %175 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%172, %174 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.subf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %176 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%175, %175 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%20 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_67: f64, %out: f64):
        %190 = arith.mulf %in, %in_67 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x64xf64>
      %177 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%176 : tensor<4x32x64xf64>) outs(%23 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.addf %in, %out : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %178 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%177 : tensor<4x32x1xf64>) outs(%22 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %190 = arith.divf %in, %cst_8 : f64
        linalg.yield %190 : f64
      } -> tensor<4x32x1xf64>
      %179 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%178 : tensor<4x32x1xf64>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %190 = arith.truncf %in : f64 to f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %180 = linalg.generic {indexing_maps = [#map1, #map12], iterator_types = ["parallel", "parallel", "reduction"]} ins(%171 : tensor<4x32x64xf32>) outs(%32 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.addf %in, %out : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %181 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%180 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.divf %in, %cst_9 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %182 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%179 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = arith.truncf %cst_7 : f64 to f32
        %191 = arith.addf %in, %190 : f32
        linalg.yield %191 : f32
      } -> tensor<4x32x1xf32>
      %183 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%182 : tensor<4x32x1xf32>) outs(%30 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %190 = math.rsqrt %in : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x1xf32>
      %184 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%171, %181 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.subf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %185 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%184, %183 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %186 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%185, %arg57 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.mulf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %187 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%186, %arg58 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_67: f32, %out: f32):
        %190 = arith.addf %in, %in_67 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x64xf32>
      %188 = tensor.empty() : tensor<64x256xf32>
      %transposed_63 = linalg.transpose ins(%arg31 : tensor<256x64xf32>) outs(%188 : tensor<64x256xf32>) permutation = [1, 0] 
      %collapsed_64 = tensor.collapse_shape %187 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %189 = linalg.matmul ins(%collapsed_64, %transposed_63 : tensor<128x64xf32>, tensor<64x256xf32>) outs(%92 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %collapsed_65 = tensor.collapse_shape %arg61 [[0, 1]] : tensor<4x32xi64> into tensor<128xi64>
      %loss_66 = train.cross_entropy mean %189, %collapsed_65 ignore_index = -100 : (tensor<128x256xf32>, tensor<128xi64>) -> tensor<f32>
      train.yield %loss_66 : tensor<f32>
    }
    return %loss, %grads#0, %grads#1, %grads#2, %grads#3, %grads#4, %grads#5, %grads#6, %grads#7, %grads#8, %grads#9, %grads#10, %grads#11, %grads#12, %grads#13, %grads#14, %grads#15, %grads#16, %grads#17, %grads#18, %grads#19, %grads#20, %grads#21, %grads#22, %grads#23, %grads#24, %grads#25, %grads#26, %grads#27 : tensor<f32>, tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
  }
}

