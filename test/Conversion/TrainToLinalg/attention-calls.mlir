// RUN: ga-opt %s --convert-train-to-linalg="attention-calls=native" | FileCheck %s
// RUN: ga-opt %s --convert-train-to-linalg="attention-calls=bf16 attention-call-masks=false attention-call-dlse=false report-attention=true" 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: not ga-opt %s --convert-train-to-linalg="attention-calls=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: convert-train-to-linalg: attention-calls must be native or bf16 (empty: none), got 'fp8'

// With attention-calls, train.attention and its gradient are one call each
// of the runtime's fused attention on the operands' buffers (unranked
// memrefs: the runtime reads sizes and strides), writing new buffers; no
// loop over tiles is left. The values: test/Integration/attention-ops.test.

// CHECK-LABEL: func.func @attention
// CHECK-NOT: scf.for
// CHECK-DAG: %[[Q:.+]] = bufferization.to_buffer %arg0 read_only : tensor<2x8x3x4xf32> to memref<2x8x3x4xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-DAG: %[[O:.+]] = memref.alloc() : memref<2x8x3x5xf32>
// CHECK-DAG: %[[L:.+]] = memref.alloc() : memref<2x3x8xf32>
// CHECK: call @ga_attention_fwd_f32({{.*}}) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, f64, i32, f64) -> ()
// CHECK: %[[OT:.+]] = bufferization.to_tensor %[[O]] restrict writable
// CHECK: call @ga_attention_bwd_f32({{.*}}) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, f64, i32, f64) -> ()
// CHECK-NOT: scf.for
// CHECK: return
// The masked forward and the backward with the log-sum-exp's cotangent.
// CHECK-LABEL: func.func @masked
// CHECK: call @ga_attention_fwd_masked_f32({{.*}}) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xi1>, memref<*xf32>, memref<*xf32>, f64, i32, f64) -> ()
// CHECK: call @ga_attention_bwd_dlse_masked_f32(

// In bfloat16: the operands rounded to bfloat16 copies for the call, its
// results widened back, the statistics float32; a target whose fused call
// takes no key mask and no cotangent of lse keeps those over tiles, and
// says so.
// BF16: remark: attention: the runtime's fused attention (bfloat16)
// BF16: remark: attention's gradient: the runtime's fused attention (bfloat16)
// BF16: remark: attention: over tiles of 4 queries and 2 keys (0: all); not the fused call: a key mask (the fused attention of this target takes causal masks only)
// BF16: remark: attention's gradient: over tiles of 4 queries and 2 keys (0: all); not the fused call: a key mask
// The backward reads the forward's bfloat16 copies of the query, key and
// value, and the forward's bfloat16 output itself (rounding its widened
// form would give it back): one rounding each, the output's gradient the
// only new one.
// BF16-LABEL: func.func @attention
// BF16: %[[QB:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x8x3x4xf32>)
// BF16: arith.truncf %{{.+}} : f32 to bf16
// BF16: %[[KB:.+]] = linalg.generic {{.*}} ins(%arg1 : tensor<2x8x3x4xf32>)
// BF16: %[[VB:.+]] = linalg.generic {{.*}} ins(%arg2 : tensor<2x8x3x5xf32>)
// BF16: call @ga_attention_fwd_bf16({{.*}}) : (memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xf32>, f64, i32, f64) -> ()
// BF16: %[[OB:.+]] = bufferization.to_tensor %{{.+}} restrict writable : memref<2x8x3x5xbf16>
// BF16: arith.extf %{{.+}} : bf16 to f32
// BF16: bufferization.to_buffer %[[QB]] read_only
// BF16: bufferization.to_buffer %[[KB]] read_only
// BF16: bufferization.to_buffer %[[VB]] read_only
// BF16: bufferization.to_buffer %[[OB]] read_only
// BF16: linalg.generic {{.*}} ins(%arg3 : tensor<2x8x3x5xf32>)
// BF16: call @ga_attention_bwd_bf16({{.*}}) : (memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xf32>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, f64, i32, f64) -> ()
// BF16-COUNT-3: arith.extf
// BF16-NOT: arith.truncf
// BF16: return
// BF16-LABEL: func.func @masked
// BF16-NOT: call @ga_attention
// BF16: scf.for

func.func @attention(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>,
                     %v: tensor<2x8x3x5xf32>, %do: tensor<2x8x3x5xf32>)
    -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>, tensor<2x8x3x4xf32>,
        tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>) {
  %o, %lse = train.attention %q, %k, %v
      {scale = 0.5 : f64, causal, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
      -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>)
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do
      {scale = 0.5 : f64, causal, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>,
         tensor<2x8x3x5xf32>, tensor<2x3x8xf32>, tensor<2x8x3x5xf32>)
      -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x8x3x5xf32>, tensor<2x3x8xf32>,
      tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>
}

func.func @masked(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>,
                  %v: tensor<2x8x3x5xf32>, %do: tensor<2x8x3x5xf32>,
                  %dl: tensor<2x3x8xf32>, %m: tensor<2x8xi1>)
    -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>) {
  %o, %lse = train.attention %q, %k, %v key_mask %m
      {scale = 0.5 : f64, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>,
         tensor<2x8xi1>) -> (tensor<2x8x3x5xf32>, tensor<2x3x8xf32>)
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do, %dl
      key_mask %m {scale = 0.5 : f64, key_tile = 2 : i64, query_tile = 4 : i64}
      : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>,
         tensor<2x8x3x5xf32>, tensor<2x3x8xf32>, tensor<2x8x3x5xf32>,
         tensor<2x3x8xf32>, tensor<2x8xi1>)
      -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x5xf32>)
  return %dq, %dk, %dv : tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>,
      tensor<2x8x3x5xf32>
}
