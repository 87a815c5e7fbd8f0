// A step of ga-import (torch-mlir 20261001, torch 2.15.0), without ga-legalize-import:
// nanoGPT with scaled_dot_product_attention (V 256, S 32, D 64, 2 layers), B 4;
// the raw forms of torch-mlir's linalg that ga-legalize-import takes. Read by
// exported-steps.test.
// difftest-floats: normal 0.05
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map6 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map7 = affine_map<(d0, d1, d2) -> (d2)>
#map8 = affine_map<(d0, d1) -> (d1)>
#map9 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map10 = affine_map<(d0, d1) -> (0, d1)>
#map11 = affine_map<(d0, d1) -> (d0, 0)>
#map12 = affine_map<(d0, d1) -> ()>
#map13 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map14 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map15 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @step(%arg0: tensor<256x64xf32>, %arg1: tensor<32x64xf32>, %arg2: tensor<64xf32>, %arg3: tensor<64xf32>, %arg4: tensor<64xf32>, %arg5: tensor<64xf32>, %arg6: tensor<192x64xf32>, %arg7: tensor<192xf32>, %arg8: tensor<64x64xf32>, %arg9: tensor<64xf32>, %arg10: tensor<256x64xf32>, %arg11: tensor<256xf32>, %arg12: tensor<64x256xf32>, %arg13: tensor<64xf32>, %arg14: tensor<64xf32>, %arg15: tensor<64xf32>, %arg16: tensor<64xf32>, %arg17: tensor<64xf32>, %arg18: tensor<192x64xf32>, %arg19: tensor<192xf32>, %arg20: tensor<64x64xf32>, %arg21: tensor<64xf32>, %arg22: tensor<256x64xf32>, %arg23: tensor<256xf32>, %arg24: tensor<64x256xf32>, %arg25: tensor<64xf32>, %arg26: tensor<64xf32>, %arg27: tensor<64xf32>, %arg28: tensor<4x32xi64>, %arg29: tensor<4x32xi64>) -> (tensor<f32>, tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
    %loss, %grads:28 = train.step params(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13, %arg14, %arg15, %arg16, %arg17, %arg18, %arg19, %arg20, %arg21, %arg22, %arg23, %arg24, %arg25, %arg26, %arg27 : tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) batch(%arg28, %arg29 : tensor<4x32xi64>, tensor<4x32xi64>) -> tensor<f32> grads(tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
    ^bb0(%arg30: tensor<256x64xf32>, %arg31: tensor<32x64xf32>, %arg32: tensor<64xf32>, %arg33: tensor<64xf32>, %arg34: tensor<64xf32>, %arg35: tensor<64xf32>, %arg36: tensor<192x64xf32>, %arg37: tensor<192xf32>, %arg38: tensor<64x64xf32>, %arg39: tensor<64xf32>, %arg40: tensor<256x64xf32>, %arg41: tensor<256xf32>, %arg42: tensor<64x256xf32>, %arg43: tensor<64xf32>, %arg44: tensor<64xf32>, %arg45: tensor<64xf32>, %arg46: tensor<64xf32>, %arg47: tensor<64xf32>, %arg48: tensor<192x64xf32>, %arg49: tensor<192xf32>, %arg50: tensor<64x64xf32>, %arg51: tensor<64xf32>, %arg52: tensor<256x64xf32>, %arg53: tensor<256xf32>, %arg54: tensor<64x256xf32>, %arg55: tensor<64xf32>, %arg56: tensor<64xf32>, %arg57: tensor<64xf32>, %arg58: tensor<4x32xi64>, %arg59: tensor<4x32xi64>):
      %c0_i64 = arith.constant 0 : i64
      %c32 = arith.constant 32 : index
      %c256 = arith.constant 256 : index
      %cst = arith.constant 0.000000e+00 : f64
      %cst_0 = arith.constant 0.000000e+00 : f32
      %cst_1 = arith.constant 0xFF800000 : f32
      %true = arith.constant true
      %cst_2 = arith.constant 1.000000e+00 : f32
      %cst_3 = arith.constant 5.000000e-01 : f32
      %cst_4 = arith.constant dense<0.000000e+00> : tensor<4x4x32x32xf32>
      %cst_5 = arith.constant dense<0.000000e+00> : tensor<f32>
      %cst_6 = arith.constant dense<0xFF800000> : tensor<f32>
      %cst_7 = arith.constant dense<true> : tensor<32x32xi1>
      %cst_8 = arith.constant 0xFFF0000000000000 : f64
      %cst_9 = arith.constant 1.000000e-05 : f64
      %cst_10 = arith.constant 6.400000e+01 : f64
      %cst_11 = arith.constant 6.400000e+01 : f32
      %cst_12 = arith.constant 1.41421354 : f32
      %0 = tensor.empty() : tensor<4x32x64xf32>
      %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg58 : tensor<4x32xi64>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: i64, %out: f32):
        %186 = arith.index_cast %in : i64 to index
        %187 = linalg.index 2 : index
        %188 = arith.cmpi slt, %186, %c256 : index
        cf.assert %188, "index must be smaller than dim size"
        %189 = arith.cmpi sge, %in, %c0_i64 : i64
        cf.assert %189, "index must be larger or equal to 0"
        %extracted = tensor.extract %arg30[%186, %187] : tensor<256x64xf32>
        linalg.yield %extracted : f32
      } -> tensor<4x32x64xf32>
      %2 = tensor.empty() : tensor<32xi64>
      %3 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel"]} outs(%2 : tensor<32xi64>) {
      ^bb0(%out: i64):
        %186 = linalg.index 0 : index
        %187 = arith.index_cast %186 : index to i64
        linalg.yield %187 : i64
      } -> tensor<32xi64>
      %4 = tensor.empty() : tensor<32x64xf32>
      %5 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<32xi64>) outs(%4 : tensor<32x64xf32>) {
      ^bb0(%in: i64, %out: f32):
        %186 = arith.index_cast %in : i64 to index
        %187 = linalg.index 1 : index
        %188 = arith.cmpi slt, %186, %c32 : index
        cf.assert %188, "index must be smaller than dim size"
        %189 = arith.cmpi sge, %in, %c0_i64 : i64
        cf.assert %189, "index must be larger or equal to 0"
        %extracted = tensor.extract %arg31[%186, %187] : tensor<32x64xf32>
        linalg.yield %extracted : f32
      } -> tensor<32x64xf32>
      %6 = linalg.generic {indexing_maps = [#map1, #map5, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<4x32x64xf32>, tensor<32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %7 = tensor.empty() : tensor<4x32x64xf64>
      %8 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6 : tensor<4x32x64xf32>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %186 = arith.extf %in : f32 to f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %9 = tensor.empty() : tensor<4x32x1xf64>
      %10 = linalg.fill ins(%cst : f64) outs(%9 : tensor<4x32x1xf64>) -> tensor<4x32x1xf64>
      %11 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%8 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %12 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %13 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8, %12 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.subf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %14 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%13, %13 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.mulf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %15 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%14 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %16 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %17 = tensor.empty() : tensor<4x32x1xf32>
      %18 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%16 : tensor<4x32x1xf64>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %186 = arith.truncf %in : f64 to f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %19 = linalg.fill ins(%cst_0 : f32) outs(%17 : tensor<4x32x1xf32>) -> tensor<4x32x1xf32>
      %20 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%6 : tensor<4x32x64xf32>) outs(%19 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.addf %in, %out : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %21 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.divf %in, %cst_11 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %22 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%18 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.truncf %cst_9 : f64 to f32
        %187 = arith.addf %in, %186 : f32
        linalg.yield %187 : f32
      } -> tensor<4x32x1xf32>
      %23 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%22 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = math.rsqrt %in : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %24 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %21 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.subf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %25 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%24, %23 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %26 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%25, %arg32 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %27 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%26, %arg33 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %collapsed = tensor.collapse_shape %27 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %28 = tensor.empty() : tensor<64x192xf32>
      %transposed = linalg.transpose ins(%arg36 : tensor<192x64xf32>) outs(%28 : tensor<64x192xf32>) permutation = [1, 0] 
      %29 = tensor.empty() : tensor<128x192xf32>
      %30 = linalg.fill ins(%cst_0 : f32) outs(%29 : tensor<128x192xf32>) -> tensor<128x192xf32>
      %31 = linalg.matmul ins(%collapsed, %transposed : tensor<128x64xf32>, tensor<64x192xf32>) outs(%30 : tensor<128x192xf32>) -> tensor<128x192xf32>
      %32 = linalg.generic {indexing_maps = [#map8, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg37 : tensor<192xf32>) outs(%29 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x192xf32>
      %33 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%31, %32 : tensor<128x192xf32>, tensor<128x192xf32>) outs(%29 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<128x192xf32>
      %expanded = tensor.expand_shape %33 [[0, 1], [2]] output_shape [4, 32, 192] : tensor<128x192xf32> into tensor<4x32x192xf32>
      %extracted_slice = tensor.extract_slice %expanded[0, 0, 0] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_13 = tensor.extract_slice %expanded[0, 0, 64] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_14 = tensor.extract_slice %expanded[0, 0, 128] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %expanded_15 = tensor.expand_shape %extracted_slice [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %34 = tensor.empty() : tensor<4x4x32x16xf32>
      %transposed_16 = linalg.transpose ins(%expanded_15 : tensor<4x32x4x16xf32>) outs(%34 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %expanded_17 = tensor.expand_shape %extracted_slice_13 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %expanded_18 = tensor.expand_shape %extracted_slice_14 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %transposed_19 = linalg.transpose ins(%expanded_18 : tensor<4x32x4x16xf32>) outs(%34 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %35 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed_16 : tensor<4x4x32x16xf32>) outs(%34 : tensor<4x4x32x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.mulf %in, %cst_3 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x16xf32>
      %expanded_20 = tensor.expand_shape %3 [[0, 1]] output_shape [1, 32] : tensor<32xi64> into tensor<1x32xi64>
      %expanded_21 = tensor.expand_shape %3 [[0, 1]] output_shape [32, 1] : tensor<32xi64> into tensor<32x1xi64>
      %36 = tensor.empty() : tensor<32x32xi64>
      %37 = linalg.generic {indexing_maps = [#map10, #map11, #map4], iterator_types = ["parallel", "parallel"]} ins(%expanded_20, %expanded_21 : tensor<1x32xi64>, tensor<32x1xi64>) outs(%36 : tensor<32x32xi64>) {
      ^bb0(%in: i64, %in_71: i64, %out: i64):
        %186 = arith.subi %in, %in_71 : i64
        linalg.yield %186 : i64
      } -> tensor<32x32xi64>
      %38 = tensor.empty() : tensor<32x32xi1>
      %39 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%37 : tensor<32x32xi64>) outs(%38 : tensor<32x32xi1>) {
      ^bb0(%in: i64, %out: i1):
        %186 = arith.cmpi sle, %in, %c0_i64 : i64
        linalg.yield %186 : i1
      } -> tensor<32x32xi1>
      %40 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%39, %cst_7 : tensor<32x32xi1>, tensor<32x32xi1>) outs(%38 : tensor<32x32xi1>) {
      ^bb0(%in: i1, %in_71: i1, %out: i1):
        %186 = arith.andi %in, %in_71 : i1
        linalg.yield %186 : i1
      } -> tensor<32x32xi1>
      %41 = tensor.empty() : tensor<32x32xf32>
      %42 = linalg.generic {indexing_maps = [#map4, #map12, #map12, #map4], iterator_types = ["parallel", "parallel"]} ins(%40, %cst_5, %cst_6 : tensor<32x32xi1>, tensor<f32>, tensor<f32>) outs(%41 : tensor<32x32xf32>) {
      ^bb0(%in: i1, %in_71: f32, %in_72: f32, %out: f32):
        %186 = arith.select %in, %in_71, %in_72 : f32
        linalg.yield %186 : f32
      } -> tensor<32x32xf32>
      %43 = tensor.empty() : tensor<4x4x16x32xf32>
      %transposed_22 = linalg.transpose ins(%expanded_17 : tensor<4x32x4x16xf32>) outs(%43 : tensor<4x4x16x32xf32>) permutation = [0, 2, 3, 1] 
      %44 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed_22 : tensor<4x4x16x32xf32>) outs(%43 : tensor<4x4x16x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.mulf %in, %cst_3 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x16x32xf32>
      %collapsed_23 = tensor.collapse_shape %35 [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %collapsed_24 = tensor.collapse_shape %44 [[0, 1], [2], [3]] : tensor<4x4x16x32xf32> into tensor<16x16x32xf32>
      %45 = tensor.empty() : tensor<16x32x32xf32>
      %46 = linalg.fill ins(%cst_0 : f32) outs(%45 : tensor<16x32x32xf32>) -> tensor<16x32x32xf32>
      %47 = linalg.batch_matmul ins(%collapsed_23, %collapsed_24 : tensor<16x32x16xf32>, tensor<16x16x32xf32>) outs(%46 : tensor<16x32x32xf32>) -> tensor<16x32x32xf32>
      %expanded_25 = tensor.expand_shape %47 [[0, 1], [2], [3]] output_shape [4, 4, 32, 32] : tensor<16x32x32xf32> into tensor<4x4x32x32xf32>
      %48 = tensor.empty() : tensor<4x4x32x32xf32>
      %49 = linalg.generic {indexing_maps = [#map9, #map13, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_25, %42 : tensor<4x4x32x32xf32>, tensor<32x32xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %50 = tensor.empty() : tensor<4x4x32xi64>
      %51 = linalg.fill ins(%c0_i64 : i64) outs(%50 : tensor<4x4x32xi64>) -> tensor<4x4x32xi64>
      %52 = tensor.empty() : tensor<4x4x32xf32>
      %53 = linalg.fill ins(%cst_1 : f32) outs(%52 : tensor<4x4x32xf32>) -> tensor<4x4x32xf32>
      %54:2 = linalg.generic {indexing_maps = [#map9, #map14, #map14], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%49 : tensor<4x4x32x32xf32>) outs(%53, %51 : tensor<4x4x32xf32>, tensor<4x4x32xi64>) {
      ^bb0(%in: f32, %out: f32, %out_71: i64):
        %186 = linalg.index 3 : index
        %187 = arith.index_cast %186 : index to i64
        %188 = arith.maximumf %in, %out : f32
        %189 = arith.cmpf ogt, %in, %out : f32
        %190 = arith.select %189, %187, %out_71 : i64
        linalg.yield %188, %190 : f32, i64
      } -> (tensor<4x4x32xf32>, tensor<4x4x32xi64>)
      %expanded_26 = tensor.expand_shape %54#0 [[0], [1], [2, 3]] output_shape [4, 4, 32, 1] : tensor<4x4x32xf32> into tensor<4x4x32x1xf32>
      %55 = linalg.generic {indexing_maps = [#map9, #map15, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%49, %expanded_26 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.subf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %56 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%55 : tensor<4x4x32x32xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = math.exp %in : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %57 = tensor.empty() : tensor<4x4x32x1xf32>
      %58 = linalg.fill ins(%cst_0 : f32) outs(%57 : tensor<4x4x32x1xf32>) -> tensor<4x4x32x1xf32>
      %59 = linalg.generic {indexing_maps = [#map9, #map15], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%56 : tensor<4x4x32x32xf32>) outs(%58 : tensor<4x4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.addf %in, %out : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x1xf32>
      %60 = linalg.generic {indexing_maps = [#map9, #map15, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%56, %59 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.divf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %61 = tensor.empty() : tensor<4x4x32x32xi1>
      %62 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%49 : tensor<4x4x32x32xf32>) outs(%61 : tensor<4x4x32x32xi1>) {
      ^bb0(%in: f32, %out: i1):
        %186 = arith.extf %in : f32 to f64
        %187 = arith.cmpf oeq, %186, %cst_8 : f64
        linalg.yield %187 : i1
      } -> tensor<4x4x32x32xi1>
      %63 = tensor.empty() : tensor<4x4x32x1xi1>
      %64 = linalg.fill ins(%true : i1) outs(%63 : tensor<4x4x32x1xi1>) -> tensor<4x4x32x1xi1>
      %65 = linalg.generic {indexing_maps = [#map9, #map15], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%62 : tensor<4x4x32x32xi1>) outs(%64 : tensor<4x4x32x1xi1>) {
      ^bb0(%in: i1, %out: i1):
        %186 = arith.andi %in, %out : i1
        linalg.yield %186 : i1
      } -> tensor<4x4x32x1xi1>
      %66 = linalg.generic {indexing_maps = [#map15, #map9, #map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%65, %cst_4, %60 : tensor<4x4x32x1xi1>, tensor<4x4x32x32xf32>, tensor<4x4x32x32xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: i1, %in_71: f32, %in_72: f32, %out: f32):
        %186 = arith.select %in, %in_71, %in_72 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %collapsed_27 = tensor.collapse_shape %66 [[0, 1], [2], [3]] : tensor<4x4x32x32xf32> into tensor<16x32x32xf32>
      %collapsed_28 = tensor.collapse_shape %transposed_19 [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %67 = tensor.empty() : tensor<16x32x16xf32>
      %68 = linalg.fill ins(%cst_0 : f32) outs(%67 : tensor<16x32x16xf32>) -> tensor<16x32x16xf32>
      %69 = linalg.batch_matmul ins(%collapsed_27, %collapsed_28 : tensor<16x32x32xf32>, tensor<16x32x16xf32>) outs(%68 : tensor<16x32x16xf32>) -> tensor<16x32x16xf32>
      %expanded_29 = tensor.expand_shape %69 [[0, 1], [2], [3]] output_shape [4, 4, 32, 16] : tensor<16x32x16xf32> into tensor<4x4x32x16xf32>
      %70 = tensor.empty() : tensor<4x32x4x16xf32>
      %transposed_30 = linalg.transpose ins(%expanded_29 : tensor<4x4x32x16xf32>) outs(%70 : tensor<4x32x4x16xf32>) permutation = [0, 2, 1, 3] 
      %collapsed_31 = tensor.collapse_shape %transposed_30 [[0], [1], [2, 3]] : tensor<4x32x4x16xf32> into tensor<4x32x64xf32>
      %71 = tensor.empty() : tensor<64x64xf32>
      %transposed_32 = linalg.transpose ins(%arg38 : tensor<64x64xf32>) outs(%71 : tensor<64x64xf32>) permutation = [1, 0] 
      %72 = tensor.empty() : tensor<4x64x64xf32>
      %73 = linalg.generic {indexing_maps = [#map5, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_32 : tensor<64x64xf32>) outs(%72 : tensor<4x64x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<4x64x64xf32>
      %74 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
      %75 = linalg.batch_matmul ins(%collapsed_31, %73 : tensor<4x32x64xf32>, tensor<4x64x64xf32>) outs(%74 : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
      %76 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%75, %arg39 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %77 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %76 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %78 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77 : tensor<4x32x64xf32>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %186 = arith.extf %in : f32 to f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %79 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%78 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %80 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%79 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %81 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%78, %80 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.subf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %82 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%81, %81 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.mulf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %83 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%82 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %84 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%83 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %85 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%84 : tensor<4x32x1xf64>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %186 = arith.truncf %in : f64 to f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %86 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%77 : tensor<4x32x64xf32>) outs(%19 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.addf %in, %out : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %87 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%86 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.divf %in, %cst_11 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %88 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%85 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.truncf %cst_9 : f64 to f32
        %187 = arith.addf %in, %186 : f32
        linalg.yield %187 : f32
      } -> tensor<4x32x1xf32>
      %89 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%88 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = math.rsqrt %in : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %90 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77, %87 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.subf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %91 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%90, %89 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %92 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%91, %arg34 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %93 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%92, %arg35 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %collapsed_33 = tensor.collapse_shape %93 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %94 = tensor.empty() : tensor<64x256xf32>
      %transposed_34 = linalg.transpose ins(%arg40 : tensor<256x64xf32>) outs(%94 : tensor<64x256xf32>) permutation = [1, 0] 
      %95 = tensor.empty() : tensor<128x256xf32>
      %96 = linalg.fill ins(%cst_0 : f32) outs(%95 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %97 = linalg.matmul ins(%collapsed_33, %transposed_34 : tensor<128x64xf32>, tensor<64x256xf32>) outs(%96 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %98 = linalg.generic {indexing_maps = [#map8, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg41 : tensor<256xf32>) outs(%95 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x256xf32>
      %99 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%97, %98 : tensor<128x256xf32>, tensor<128x256xf32>) outs(%95 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<128x256xf32>
      %expanded_35 = tensor.expand_shape %99 [[0, 1], [2]] output_shape [4, 32, 256] : tensor<128x256xf32> into tensor<4x32x256xf32>
      %100 = tensor.empty() : tensor<4x32x256xf32>
      %101 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_35 : tensor<4x32x256xf32>) outs(%100 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.divf %in, %cst_12 : f32
        %187 = math.erf %186 : f32
        %188 = arith.addf %187, %cst_2 : f32
        %189 = arith.mulf %188, %cst_3 : f32
        %190 = arith.mulf %in, %189 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %collapsed_36 = tensor.collapse_shape %101 [[0, 1], [2]] : tensor<4x32x256xf32> into tensor<128x256xf32>
      %102 = tensor.empty() : tensor<256x64xf32>
      %transposed_37 = linalg.transpose ins(%arg42 : tensor<64x256xf32>) outs(%102 : tensor<256x64xf32>) permutation = [1, 0] 
      %103 = tensor.empty() : tensor<128x64xf32>
      %104 = linalg.fill ins(%cst_0 : f32) outs(%103 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %105 = linalg.matmul ins(%collapsed_36, %transposed_37 : tensor<128x256xf32>, tensor<256x64xf32>) outs(%104 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %106 = linalg.generic {indexing_maps = [#map8, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg43 : tensor<64xf32>) outs(%103 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x64xf32>
      %107 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%105, %106 : tensor<128x64xf32>, tensor<128x64xf32>) outs(%103 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<128x64xf32>
      %expanded_38 = tensor.expand_shape %107 [[0, 1], [2]] output_shape [4, 32, 64] : tensor<128x64xf32> into tensor<4x32x64xf32>
      %108 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77, %expanded_38 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %109 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108 : tensor<4x32x64xf32>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %186 = arith.extf %in : f32 to f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %110 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%109 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %111 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%110 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %112 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%109, %111 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.subf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %113 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%112, %112 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.mulf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %114 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%113 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %115 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%114 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %116 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%115 : tensor<4x32x1xf64>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %186 = arith.truncf %in : f64 to f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %117 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%108 : tensor<4x32x64xf32>) outs(%19 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.addf %in, %out : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %118 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%117 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.divf %in, %cst_11 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %119 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%116 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.truncf %cst_9 : f64 to f32
        %187 = arith.addf %in, %186 : f32
        linalg.yield %187 : f32
      } -> tensor<4x32x1xf32>
      %120 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%119 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = math.rsqrt %in : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %121 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108, %118 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.subf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %122 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%121, %120 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %123 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%122, %arg44 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %124 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%123, %arg45 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %collapsed_39 = tensor.collapse_shape %124 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %transposed_40 = linalg.transpose ins(%arg48 : tensor<192x64xf32>) outs(%28 : tensor<64x192xf32>) permutation = [1, 0] 
      %125 = linalg.matmul ins(%collapsed_39, %transposed_40 : tensor<128x64xf32>, tensor<64x192xf32>) outs(%30 : tensor<128x192xf32>) -> tensor<128x192xf32>
      %126 = linalg.generic {indexing_maps = [#map8, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg49 : tensor<192xf32>) outs(%29 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x192xf32>
      %127 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%125, %126 : tensor<128x192xf32>, tensor<128x192xf32>) outs(%29 : tensor<128x192xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<128x192xf32>
      %expanded_41 = tensor.expand_shape %127 [[0, 1], [2]] output_shape [4, 32, 192] : tensor<128x192xf32> into tensor<4x32x192xf32>
      %extracted_slice_42 = tensor.extract_slice %expanded_41[0, 0, 0] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_43 = tensor.extract_slice %expanded_41[0, 0, 64] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %extracted_slice_44 = tensor.extract_slice %expanded_41[0, 0, 128] [4, 32, 64] [1, 1, 1] : tensor<4x32x192xf32> to tensor<4x32x64xf32>
      %expanded_45 = tensor.expand_shape %extracted_slice_42 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %transposed_46 = linalg.transpose ins(%expanded_45 : tensor<4x32x4x16xf32>) outs(%34 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %expanded_47 = tensor.expand_shape %extracted_slice_43 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %expanded_48 = tensor.expand_shape %extracted_slice_44 [[0], [1], [2, 3]] output_shape [4, 32, 4, 16] : tensor<4x32x64xf32> into tensor<4x32x4x16xf32>
      %transposed_49 = linalg.transpose ins(%expanded_48 : tensor<4x32x4x16xf32>) outs(%34 : tensor<4x4x32x16xf32>) permutation = [0, 2, 1, 3] 
      %128 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed_46 : tensor<4x4x32x16xf32>) outs(%34 : tensor<4x4x32x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.mulf %in, %cst_3 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x16xf32>
      %transposed_50 = linalg.transpose ins(%expanded_47 : tensor<4x32x4x16xf32>) outs(%43 : tensor<4x4x16x32xf32>) permutation = [0, 2, 3, 1] 
      %129 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed_50 : tensor<4x4x16x32xf32>) outs(%43 : tensor<4x4x16x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.mulf %in, %cst_3 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x16x32xf32>
      %collapsed_51 = tensor.collapse_shape %128 [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %collapsed_52 = tensor.collapse_shape %129 [[0, 1], [2], [3]] : tensor<4x4x16x32xf32> into tensor<16x16x32xf32>
      %130 = linalg.batch_matmul ins(%collapsed_51, %collapsed_52 : tensor<16x32x16xf32>, tensor<16x16x32xf32>) outs(%46 : tensor<16x32x32xf32>) -> tensor<16x32x32xf32>
      %expanded_53 = tensor.expand_shape %130 [[0, 1], [2], [3]] output_shape [4, 4, 32, 32] : tensor<16x32x32xf32> into tensor<4x4x32x32xf32>
      %131 = linalg.generic {indexing_maps = [#map9, #map13, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_53, %42 : tensor<4x4x32x32xf32>, tensor<32x32xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %132:2 = linalg.generic {indexing_maps = [#map9, #map14, #map14], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%131 : tensor<4x4x32x32xf32>) outs(%53, %51 : tensor<4x4x32xf32>, tensor<4x4x32xi64>) {
      ^bb0(%in: f32, %out: f32, %out_71: i64):
        %186 = linalg.index 3 : index
        %187 = arith.index_cast %186 : index to i64
        %188 = arith.maximumf %in, %out : f32
        %189 = arith.cmpf ogt, %in, %out : f32
        %190 = arith.select %189, %187, %out_71 : i64
        linalg.yield %188, %190 : f32, i64
      } -> (tensor<4x4x32xf32>, tensor<4x4x32xi64>)
      %expanded_54 = tensor.expand_shape %132#0 [[0], [1], [2, 3]] output_shape [4, 4, 32, 1] : tensor<4x4x32xf32> into tensor<4x4x32x1xf32>
      %133 = linalg.generic {indexing_maps = [#map9, #map15, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%131, %expanded_54 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.subf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %134 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%133 : tensor<4x4x32x32xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = math.exp %in : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %135 = linalg.generic {indexing_maps = [#map9, #map15], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%134 : tensor<4x4x32x32xf32>) outs(%58 : tensor<4x4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.addf %in, %out : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x1xf32>
      %136 = linalg.generic {indexing_maps = [#map9, #map15, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%134, %135 : tensor<4x4x32x32xf32>, tensor<4x4x32x1xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.divf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %137 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%131 : tensor<4x4x32x32xf32>) outs(%61 : tensor<4x4x32x32xi1>) {
      ^bb0(%in: f32, %out: i1):
        %186 = arith.extf %in : f32 to f64
        %187 = arith.cmpf oeq, %186, %cst_8 : f64
        linalg.yield %187 : i1
      } -> tensor<4x4x32x32xi1>
      %138 = linalg.generic {indexing_maps = [#map9, #map15], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%137 : tensor<4x4x32x32xi1>) outs(%64 : tensor<4x4x32x1xi1>) {
      ^bb0(%in: i1, %out: i1):
        %186 = arith.andi %in, %out : i1
        linalg.yield %186 : i1
      } -> tensor<4x4x32x1xi1>
      %139 = linalg.generic {indexing_maps = [#map15, #map9, #map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%138, %cst_4, %136 : tensor<4x4x32x1xi1>, tensor<4x4x32x32xf32>, tensor<4x4x32x32xf32>) outs(%48 : tensor<4x4x32x32xf32>) {
      ^bb0(%in: i1, %in_71: f32, %in_72: f32, %out: f32):
        %186 = arith.select %in, %in_71, %in_72 : f32
        linalg.yield %186 : f32
      } -> tensor<4x4x32x32xf32>
      %collapsed_55 = tensor.collapse_shape %139 [[0, 1], [2], [3]] : tensor<4x4x32x32xf32> into tensor<16x32x32xf32>
      %collapsed_56 = tensor.collapse_shape %transposed_49 [[0, 1], [2], [3]] : tensor<4x4x32x16xf32> into tensor<16x32x16xf32>
      %140 = linalg.batch_matmul ins(%collapsed_55, %collapsed_56 : tensor<16x32x32xf32>, tensor<16x32x16xf32>) outs(%68 : tensor<16x32x16xf32>) -> tensor<16x32x16xf32>
      %expanded_57 = tensor.expand_shape %140 [[0, 1], [2], [3]] output_shape [4, 4, 32, 16] : tensor<16x32x16xf32> into tensor<4x4x32x16xf32>
      %transposed_58 = linalg.transpose ins(%expanded_57 : tensor<4x4x32x16xf32>) outs(%70 : tensor<4x32x4x16xf32>) permutation = [0, 2, 1, 3] 
      %collapsed_59 = tensor.collapse_shape %transposed_58 [[0], [1], [2, 3]] : tensor<4x32x4x16xf32> into tensor<4x32x64xf32>
      %transposed_60 = linalg.transpose ins(%arg50 : tensor<64x64xf32>) outs(%71 : tensor<64x64xf32>) permutation = [1, 0] 
      %141 = linalg.generic {indexing_maps = [#map5, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_60 : tensor<64x64xf32>) outs(%72 : tensor<4x64x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<4x64x64xf32>
      %142 = linalg.batch_matmul ins(%collapsed_59, %141 : tensor<4x32x64xf32>, tensor<4x64x64xf32>) outs(%74 : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
      %143 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%142, %arg51 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %144 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108, %143 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %145 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%144 : tensor<4x32x64xf32>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %186 = arith.extf %in : f32 to f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %146 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%145 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %147 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%146 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %148 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%145, %147 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.subf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %149 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%148, %148 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.mulf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %150 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%149 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %151 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%150 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %152 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%151 : tensor<4x32x1xf64>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %186 = arith.truncf %in : f64 to f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %153 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%144 : tensor<4x32x64xf32>) outs(%19 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.addf %in, %out : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %154 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%153 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.divf %in, %cst_11 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %155 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%152 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.truncf %cst_9 : f64 to f32
        %187 = arith.addf %in, %186 : f32
        linalg.yield %187 : f32
      } -> tensor<4x32x1xf32>
      %156 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%155 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = math.rsqrt %in : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %157 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%144, %154 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.subf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %158 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%157, %156 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %159 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%158, %arg46 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %160 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%159, %arg47 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %collapsed_61 = tensor.collapse_shape %160 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %transposed_62 = linalg.transpose ins(%arg52 : tensor<256x64xf32>) outs(%94 : tensor<64x256xf32>) permutation = [1, 0] 
      %161 = linalg.matmul ins(%collapsed_61, %transposed_62 : tensor<128x64xf32>, tensor<64x256xf32>) outs(%96 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %162 = linalg.generic {indexing_maps = [#map8, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg53 : tensor<256xf32>) outs(%95 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x256xf32>
      %163 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%161, %162 : tensor<128x256xf32>, tensor<128x256xf32>) outs(%95 : tensor<128x256xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<128x256xf32>
      %expanded_63 = tensor.expand_shape %163 [[0, 1], [2]] output_shape [4, 32, 256] : tensor<128x256xf32> into tensor<4x32x256xf32>
      %164 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_63 : tensor<4x32x256xf32>) outs(%100 : tensor<4x32x256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.divf %in, %cst_12 : f32
        %187 = math.erf %186 : f32
        %188 = arith.addf %187, %cst_2 : f32
        %189 = arith.mulf %188, %cst_3 : f32
        %190 = arith.mulf %in, %189 : f32
        linalg.yield %190 : f32
      } -> tensor<4x32x256xf32>
      %collapsed_64 = tensor.collapse_shape %164 [[0, 1], [2]] : tensor<4x32x256xf32> into tensor<128x256xf32>
      %transposed_65 = linalg.transpose ins(%arg54 : tensor<64x256xf32>) outs(%102 : tensor<256x64xf32>) permutation = [1, 0] 
      %165 = linalg.matmul ins(%collapsed_64, %transposed_65 : tensor<128x256xf32>, tensor<256x64xf32>) outs(%104 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %166 = linalg.generic {indexing_maps = [#map8, #map4], iterator_types = ["parallel", "parallel"]} ins(%arg55 : tensor<64xf32>) outs(%103 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<128x64xf32>
      %167 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%165, %166 : tensor<128x64xf32>, tensor<128x64xf32>) outs(%103 : tensor<128x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<128x64xf32>
      %expanded_66 = tensor.expand_shape %167 [[0, 1], [2]] output_shape [4, 32, 64] : tensor<128x64xf32> into tensor<4x32x64xf32>
      %168 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%144, %expanded_66 : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %169 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%168 : tensor<4x32x64xf32>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f32, %out: f64):
        %186 = arith.extf %in : f32 to f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %170 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%169 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %171 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%170 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %172 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%169, %171 : tensor<4x32x64xf64>, tensor<4x32x1xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.subf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %173 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%172, %172 : tensor<4x32x64xf64>, tensor<4x32x64xf64>) outs(%7 : tensor<4x32x64xf64>) {
      ^bb0(%in: f64, %in_71: f64, %out: f64):
        %186 = arith.mulf %in, %in_71 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x64xf64>
      %174 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%173 : tensor<4x32x64xf64>) outs(%10 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.addf %in, %out : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %175 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%174 : tensor<4x32x1xf64>) outs(%9 : tensor<4x32x1xf64>) {
      ^bb0(%in: f64, %out: f64):
        %186 = arith.divf %in, %cst_10 : f64
        linalg.yield %186 : f64
      } -> tensor<4x32x1xf64>
      %176 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%175 : tensor<4x32x1xf64>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f64, %out: f32):
        %186 = arith.truncf %in : f64 to f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %177 = linalg.generic {indexing_maps = [#map1, #map6], iterator_types = ["parallel", "parallel", "reduction"]} ins(%168 : tensor<4x32x64xf32>) outs(%19 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.addf %in, %out : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %178 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%177 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.divf %in, %cst_11 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %179 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%176 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = arith.truncf %cst_9 : f64 to f32
        %187 = arith.addf %in, %186 : f32
        linalg.yield %187 : f32
      } -> tensor<4x32x1xf32>
      %180 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%179 : tensor<4x32x1xf32>) outs(%17 : tensor<4x32x1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %186 = math.rsqrt %in : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x1xf32>
      %181 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%168, %178 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.subf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %182 = linalg.generic {indexing_maps = [#map1, #map6, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%181, %180 : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %183 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%182, %arg56 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.mulf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %184 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%183, %arg57 : tensor<4x32x64xf32>, tensor<64xf32>) outs(%0 : tensor<4x32x64xf32>) {
      ^bb0(%in: f32, %in_71: f32, %out: f32):
        %186 = arith.addf %in, %in_71 : f32
        linalg.yield %186 : f32
      } -> tensor<4x32x64xf32>
      %transposed_67 = linalg.transpose ins(%arg30 : tensor<256x64xf32>) outs(%94 : tensor<64x256xf32>) permutation = [1, 0] 
      %collapsed_68 = tensor.collapse_shape %184 [[0, 1], [2]] : tensor<4x32x64xf32> into tensor<128x64xf32>
      %185 = linalg.matmul ins(%collapsed_68, %transposed_67 : tensor<128x64xf32>, tensor<64x256xf32>) outs(%96 : tensor<128x256xf32>) -> tensor<128x256xf32>
      %collapsed_69 = tensor.collapse_shape %arg59 [[0, 1]] : tensor<4x32xi64> into tensor<128xi64>
      %loss_70 = train.cross_entropy mean %185, %collapsed_69 ignore_index = -100 : (tensor<128x256xf32>, tensor<128xi64>) -> tensor<f32>
      train.yield %loss_70 : tensor<f32>
    }
    return %loss, %grads#0, %grads#1, %grads#2, %grads#3, %grads#4, %grads#5, %grads#6, %grads#7, %grads#8, %grads#9, %grads#10, %grads#11, %grads#12, %grads#13, %grads#14, %grads#15, %grads#16, %grads#17, %grads#18, %grads#19, %grads#20, %grads#21, %grads#22, %grads#23, %grads#24, %grads#25, %grads#26, %grads#27 : tensor<f32>, tensor<256x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
  }
}

